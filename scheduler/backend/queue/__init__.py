"""The scheduling queue: activeQ, backoffQ, unschedulable pods (upstream ``backend/queue``). No I/O."""
