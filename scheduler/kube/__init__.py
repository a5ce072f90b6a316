"""The I/O layer: the informer (kopf's list and watch) and kubernetes.aio writes. The only package that imports them."""
