"""Presentation only: result -> rich renderable or JSON text."""
