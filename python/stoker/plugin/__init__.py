"""Framework iterators: ``stoker.plugin.torch``, ``stoker.plugin.jax`` and the
framework-neutral ``stoker.plugin.numpy``, all built on ``stoker.plugin.base``."""
