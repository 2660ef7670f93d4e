"""Integrations with other systems; each needs its extra (e.g. ``pip install 'flowforge[azure]'``)."""
