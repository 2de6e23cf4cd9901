"""Figures and the self-contained HTML report of a trace run (`build_report`)."""

from crossknow.report.build import DYNAMICS_FILE, FIGURES, REPORT_FILE, build_report

__all__ = ["DYNAMICS_FILE", "FIGURES", "REPORT_FILE", "build_report"]
