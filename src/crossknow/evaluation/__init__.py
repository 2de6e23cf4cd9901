"""`crossknow evaluate`: loss-based multiple-choice scoring into a run directory."""
