"""The topology as plain data: nodes, directed links, and cached routes."""
