"""The author's kit: what a protocol's requirements, faults and references are written with
(``declare``, ``check``, ``faults``, ``protocol``, ``reference``, ``machine``, ``locate``,
``live``, ``evidence``, ``shapes``). It imports only the leaves, documents/, generation/
and transport/; the check families a check calls are in conformance/checks/."""
