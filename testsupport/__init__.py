"""What tests, benchmarks and samples share, so that none of them imports another.

- :mod:`testsupport.waiting`: the one wait-with-deadline helper.
- :mod:`testsupport.postgres`: a PostgreSQL server found or started on demand.
- :mod:`testsupport.tcp_proxy`: a TCP forwarder that can cut connections or switch targets.
- :mod:`testsupport.store_rows`: store rows for tests that write to a store directly.
- :mod:`testsupport.counting`: counters of store transactions and client RPCs.
- :mod:`testsupport.workloads`: the one-activity workflow the hot-path measurements run.
- :mod:`testsupport.large_payloads`: a workflow carrying one large value through every payload path.
- :mod:`testsupport.install_lock`: one installer at a time when parallel test workers find a tool missing.
- :mod:`testsupport.otlp_receiver`: an OTLP/HTTP trace receiver that keeps the spans it is sent.
"""
