"""Report: the files people read: tables (summary.csv and the others), figures, LaTeX for a paper, and the
comparison of two sweeps."""
