"""PyFlink and Flink SQL test jobs of different shapes, fed by an outside bursty producer.

Each job module runs inside the Flink environment (``.venv-flink``) and imports only
PyFlink, the standard library and :mod:`connectors.flink.probe`; ``producer`` is
standard library only. ``benchmarks/flink_study.py --grid`` runs them (docs/flink.md,
"Accuracy over a grid of jobs").
"""
