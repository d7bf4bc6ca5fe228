"""Loopback fakes (127.0.0.1 only) that speak real protocols, for tests that drive the real SDKs."""
