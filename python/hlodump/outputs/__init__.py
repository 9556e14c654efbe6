"""What the analyses are shown as: the HTML report (html_report, report_page), the PNG
plots of the memory timeline (plot) and of an out-of-memory paste (oom_plot)."""
