"""The parts of `atompin.analysis.checks.UsageChecker`, one kind of check each."""
