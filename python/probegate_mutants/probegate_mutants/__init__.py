"""Mutation operators for AI-infrastructure code, as a cosmic-ray operator provider, and the
generator probegate runs to make mutants of a task's reference change (it evaluates them itself)."""
