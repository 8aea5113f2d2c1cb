"""Reports: the JSON a run writes, and the summary it prints."""

from netsparse_torch.report.train_report import build_train_report, summary_lines, write_json

__all__ = ["build_train_report", "summary_lines", "write_json"]
