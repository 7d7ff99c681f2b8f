"""The Data health page: ingestion batches, files waiting, quarantined rows."""
