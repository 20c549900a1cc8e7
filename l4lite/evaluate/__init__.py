"""Evaluate: the scoreboard. Runs the analyser and L4's two baselines on jobs with ``ground_truth.json`` and
scores faulty-node top-k, phase, category, evidence precision/recall and false incidents (``scoreboard``).

``corpus`` plants the real corpus's excerpts in small jobs (``planting``) and scores them, its dev and held-out
parts apart; ``calibration`` checks the incident's confidence; ``components_train`` trains the learned component
classifier from text no held-out or score-only sample shares.
"""
