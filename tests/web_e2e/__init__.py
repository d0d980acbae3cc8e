"""Helpers for the shopper page's browser tests (tests/test_web_e2e.py)."""
