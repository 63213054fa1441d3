"""Renderers: findings and locks in, text out (plain text, JSON, ...)."""
