"""Detectors: each turns a scanned job into findings. They never call each other; ``localize`` combines them."""
