"""The rate limit of the test campaigns whose fio must run for its time but not load the machine.

fio paces a rate-limited job by sleeping until its next I/O is due, except that a wait shorter than the
longest of ten 1 us nanosleeps it timed at start-up is spun, not slept (fio's time.c: ``fio_time_init``,
``usec_sleep``). On a loaded machine one of those ten can take milliseconds, and a job limited to 500 IO/s
(2 ms apart) then keeps a core busy for its whole runtime: in a parallel test run, a 4 s point of two
such jobs used 4.4 CPU-s, where it uses 0.45 on a quiet machine. Timed the same way during a whole
parallel test run (1,820 samples), the longest of ten such sleeps took 2 ms or more in 11 % of the
samples, and 20 ms or more in 0.1 %. At 50 IO/s the I/Os are 20 ms apart, and the jobs sleep.
"""

#: IO/s per job and direction: the points last as declared and do little (64 KiB I/O: 3.2 MB/s)
IDLE_IOPS = 50

#: fio's clock without its calibration: with its default clock source (the CPU's TSC), every fio run spins
#: about 50 ms timing the TSC before its job starts (fio's time.c, ``calibrate_cpu_clock``); clock_gettime
#: needs none. The suite starts some 600 fio runs, none of which measures anything but its own bookkeeping.
NO_CALIBRATION = {"clocksource": "clock_gettime"}
#: the fio ``options`` of a test campaign that must run for its time but not load the machine
IDLE = {"rate_iops": IDLE_IOPS, **NO_CALIBRATION}
