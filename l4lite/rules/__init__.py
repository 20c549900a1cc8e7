"""Rules: the signature pack (``default.toml`` plus user files) and its keyword gate.

Takes records; gives rule matches, each with a category, a role (root, cascade, symptom, confirmation), a
severity, an explanation and an action. Signatures are data, so users extend them without code (``rulefile``
checks a file). What a line names beyond the rules is data too: exception classes, errnos and CUDA errors
(``exceptions``), Xid codes (``xid``), a component lexicon (``components``) and the learned classifier behind it
(``learned``).
"""
