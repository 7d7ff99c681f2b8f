"""Mace estimator: domain model, DLTS, cumulative excess, Mace, bounds, what-if, fitting."""
