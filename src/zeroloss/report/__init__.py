"""The HTML report and its figures (SVG drawn by svgdraw.py; PNG through matplotlib) (reads result files only)."""
