"""Broker: managers and request processors."""
