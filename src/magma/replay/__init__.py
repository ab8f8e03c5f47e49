"""Trace replay: Alibaba's openb GPU trace under FGD's protocol, with placement policies (see protocol.py).

Layering: replay imports the scheduler (for the GPU fragmentation math and magma's scoring function, so the
replay measures the very code the live scheduler runs), never the CLI or the simulator.
"""
