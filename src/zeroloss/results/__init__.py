"""Result files and what is read from them: the run file format, per-frame summaries, exports, comparison."""
