-- How a TaskManager runs its Python operators: 'per-slot' (a Python worker process per
-- task slot, PyFlink's process mode) or 'shared' (one interpreter, loopback mode).
-- NULL: not recorded (one interpreter).
ALTER TABLE nodes ADD COLUMN python_workers VARCHAR;
