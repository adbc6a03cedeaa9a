"""The kit's proofs of itself: the fault matrix (``selftest``: every requirement passes on the
clean reference and catches each fault it names, holds on each variant and shape variant) and
the live-run proof (``liverun``: a run without control changes no configured identity). They
run the run against the references; the drivers call them."""
