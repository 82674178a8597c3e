"""Helm: the chart index, the one Helm client and the one values merge."""
