"""Helpers the tests import: embedders, stores, servers, clients and data (no tests, no fixtures;
fixtures live in the conftest.py files)."""
