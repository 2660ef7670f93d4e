"""An expense approval driven by signals, watched by a query, bounded by a timeout."""
