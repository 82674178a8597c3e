"""Test and lint harness shared by nox sessions, pytest tiers and CI."""

from __future__ import annotations
