"""Guardrails: do-not-store rules (docs/guardrails.md).

`detectors` finds secrets and personal data (pure functions), `rules` compiles and applies the
rules (the write path and record_turn ask it), `log` keeps the Blocked log, `stored` applies a
rule to what is already stored, `turns` reads and restores a turn's text for undo, `evaluate`
scores the detectors on the labelled set.
"""
