"""Jinja2 templates of the HTML report, installed as the package ``l4lite.templates``."""
