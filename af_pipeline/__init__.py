"""activity-frames: a deterministic compiler from screen capture to agent memory."""

__version__ = "0.1.0"
GENERATOR = f"activity-frames {__version__}"
