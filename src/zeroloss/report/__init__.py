"""What is read back from result files (and only that): the HTML report, its figures (SVG drawn by svgdraw.py, PNG
through matplotlib) and explain: where a trial's frames were lost and why."""
