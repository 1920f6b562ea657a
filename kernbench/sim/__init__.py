"""The SimPy system: fabric, PE components, and the run loop."""
