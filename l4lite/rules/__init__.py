"""Rules: the signature pack (``default.toml`` plus user files) and its keyword gate.

Takes records; gives rule matches, each with a category, a role (root, cascade, symptom, confirmation), a
severity, an explanation and an action. Signatures are data, so users extend them without code.
"""
