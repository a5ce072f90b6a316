"""What the scheduler keeps between cycles: the cache of what is where, and the queue of pods to place."""
