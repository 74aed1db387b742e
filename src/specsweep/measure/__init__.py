"""Measure: one configuration's session (launch, wait, warm up, runs, load windows, stop), the streaming
client, the machine and placement it ran on, and what a measuring job asks of a cluster."""
