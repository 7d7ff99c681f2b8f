-- A TaskManager's task slots where the engine said how many it has (Flink's
-- taskmanager.numberOfTaskSlots, read by mace collect flink). NULL: not recorded.
ALTER TABLE nodes ADD COLUMN slots INTEGER;
