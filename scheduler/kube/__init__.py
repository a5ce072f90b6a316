"""The I/O layer: kopf watches and kubernetes.aio writes. The only package that imports them."""
