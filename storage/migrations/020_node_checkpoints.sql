-- How often a checkpoint barrier comes (seconds; Flink's execution.checkpointing.interval):
-- each finishes every Python operator's bundle. NULL: no checkpoints recorded.
ALTER TABLE nodes ADD COLUMN checkpoint_interval DOUBLE;
