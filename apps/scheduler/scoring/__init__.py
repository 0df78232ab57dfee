"""Framework-free scoring for the extender and the evaluation harness (no Django imports)."""
