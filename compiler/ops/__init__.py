"""The operator inventory (compute definitions and schedules)."""
