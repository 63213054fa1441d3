"""The parts of `atompin.analysis.scanner.ConsumerScanner`, one concern each."""
