"""`crossknow pitfalls categorize`: pairs sorted into the six subject domains of Table 4; `run.py` is the command
(the stage it shares with a probe run is `crossknow.pitfalls.categories`)."""
