"""Evaluate: the scoreboard. Runs the analyser and L4's two baselines on jobs with ``ground_truth.json`` and
scores faulty-node top-k, phase, category, evidence precision/recall and false incidents.
"""
