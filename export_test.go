package flowfabric

// Crash simulates the worker's process dying (see crash).
func (w *Worker) Crash() { w.crash() }
