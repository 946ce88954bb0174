"""A side-effect-only config plugin: importing it marks :mod:`marked_mechanisms` ready (it registers nothing)."""

import marked_mechanisms

marked_mechanisms.READY = True
