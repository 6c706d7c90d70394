// Package autorate adjusts a shaping rate to a link whose capacity moves
// (LTE and 5G, Starlink, shared cable, Wi-Fi backhaul), as the OpenWrt
// script cake-autorate adjusts CAKE's: it watches delay probes to a few
// reflectors and the rate the shaper achieves, cuts the rate when the
// delays show a queue forming beyond the shaper, and raises it while the
// link is busy and the delays stay low.
//
// A shaper only helps when its rate sits just below the bottleneck: too
// low wastes capacity, too high lets the queue form upstream, in a modem or
// base station no AQM sees. A [Controller] is the decision half: the caller
// sends the probes, measures the achieved rate, and hands both in with the
// instant they arrived; the controller returns the rate to use and, given a
// [Setter] with [Controller.Drive], applies it (any front, or a cake.Queue).
//
//	c, _ := autorate.New(autorate.Config{MinRate: 10 * aqm.Mbit, BaseRate: 40 * aqm.Mbit, MaxRate: 200 * aqm.Mbit})
//	c.Drive(f) // a front.Front, front.Sharded, front.IP or cake.Queue
//	// for each probe reply:      c.Sample(now, reflector, rtt)
//	// every 200 ms:              c.Achieved(now, bytesSent*8/elapsed)
//	// every second or so:        c.Tick(now)
//
// # Algorithm
//
// Each reflector r keeps a baseline delay b_r, an EWMA that rises slowly and
// falls fast, so that it tracks the shortest path and not the queue:
//
//	α = BaselineRise if d ≥ b_r, else BaselineFall
//	b_r = α·d + (1−α)·b_r          (the first sample sets b_r = d)
//	δ = d − b_r                    the sample's delay rise
//
// While the load is not high, an EWMA of δ (weight DeltaAlpha) is kept per
// reflector for the health checks below. The last DetectionWindow samples
// of all active reflectors form the detection window; a sample is delayed
// if δ > thr, where each threshold thr is the configured one plus one
// PacketBytes packet's time at the current rate. With δ̄ the mean rise over
// the window, each judged sample leads to one decision:
//
//   - Bufferbloat, at least DetectionThreshold delayed samples in the
//     window: unless within CutRefractory of the last cut, cut
//     rate ← rate·(1 − c), c = MinCut + f·(MaxCut − MinCut),
//     f = clamp((δ̄ − thr)/(thr_FullCutAbove − thr), 0, 1). With
//     AchievedCut a set, the cut goes instead to a·A, A the last achieved
//     rate, when a·A is lower and above MinRate: the senders are clocked
//     by the bottleneck, so after a fall in capacity A is already near the
//     new capacity and one cut gets there.
//   - High load (the last achieved rate ≥ HighLoad·rate): unless within
//     CutRefractory of the last cut or IncreaseRefractory of the last
//     increase, and only with an achieved rate reported since the last
//     increase, raise rate ← rate·(1 + i), i = MinIncrease +
//     f·(MaxIncrease − MinIncrease), f = clamp((thr − δ̄)/(thr −
//     thr_FullIncreaseBelow), 0, 1): the increase vanishes as the delay
//     approaches the threshold. With Recovery set, an increase after an
//     episode of cuts goes instead to rate + f·Recovery·(R − rate), R the
//     rate the episode's first cut started from, when that is more (and
//     never past R): the rate climbs back to where the link last held in
//     a step or a few rather than 4 % at a time.
//   - Otherwise (low load): unless within CutRefractory of the last cut or
//     DecayRefractory of the last change (a cut, an increase, a fallback,
//     or a decay check, even one at BaseRate that moved nothing), move one
//     DecayStep towards BaseRate, never past it.
//
// A sample must measure the queue beyond the shaper, not the shaper's own.
// A probe that waits in the shaper's queue sees, at a low rate, a round of
// every backlogged flow's packet (n·MTU/rate, 480 ms for four flows at
// 100 kbit/s): that reads as bufferbloat, the cut lowers the rate, the
// wait grows, and the rate is held at MinRate however fast the link is.
// Time a probe from when it leaves the shaper (a transmit timestamp taken
// after the queue, SO_TIMESTAMPING's TX_SCHED or TX_SOFTWARE on Linux) or
// send it around the shaper, or use no probe at all: a [PassiveRTT] times
// the TCP flows the router forwards where they leave and re-enter its WAN
// side, which leaves its own queue out by construction.
//
// The rate is rounded to whole bits per second and kept in [MinRate,
// MaxRate]; a decision at a bound may leave it unchanged.
//
// Reflector health. Every HealthInterval a check counts an offence against
// each active reflector silent for more than ResponseDeadline; one with
// OffenceThreshold offences in the last OffenceWindow checks is rested (at
// most one per check). Every ComparisonInterval, with at least two active
// reflectors, the first whose baseline is more than BaselineSpread above the
// lowest active baseline, or whose δ EWMA is more than DeltaSpread above the
// lowest, is rested: its path is longer or noisier than the others'. A
// rested reflector's samples keep its baseline current but are not judged;
// after RestTime it is re-admitted with its offences cleared, and at once if
// no reflector is active.
//
// # When probes stop
//
// Decisions are made on judged samples only, so while no sample arrives
// the rate holds where it is: a short outage of the probes (a reflector
// rebooting, a burst of ICMP rate limiting) neither raises nor lowers it.
// Once no active reflector has answered for ProbeTimeout (10 s), the next
// call (Sample, Achieved or Tick) falls back to BaseRate: the rate the
// operator trusts without measurements, neither the maximum that may bloat
// nor the minimum that starves. The detection window and the load report
// are cleared, since they describe the link before the silence. The first
// judged sample resumes normal operation from there. Call Tick now and then
// (say every second) if probes and load reports may both stop.
//
// # Parameters
//
//	field                default   unit      cake-autorate
//	MinRate              5 Mbit/s  rate      min_dl_shaper_rate_kbps
//	BaseRate             20 Mbit/s rate      base_dl_shaper_rate_kbps
//	MaxRate              80 Mbit/s rate      max_dl_shaper_rate_kbps
//	DelayThreshold       30 ms     time      dl_owd_delta_delay_thr_ms
//	FullIncreaseBelow    10 ms     time      dl_avg_owd_delta_max_adjust_up_thr_ms
//	FullCutAbove         60 ms     time      dl_avg_owd_delta_max_adjust_down_thr_ms
//	DetectionWindow      6         samples   bufferbloat_detection_window
//	DetectionThreshold   3         samples   bufferbloat_detection_thr
//	BaselineRise         0.001     weight    alpha_baseline_increase
//	BaselineFall         0.9       weight    alpha_baseline_decrease
//	DeltaAlpha           0.095     weight    alpha_delta_ewma
//	MinCut, MaxCut       0.01, 0.25 fraction shaper_rate_{min,max}_adjust_down_bufferbloat 0.99, 0.75
//	AchievedCut          0 (off)   fraction  achieved_rate_adjust_down_bufferbloat 0.9 (up to v3.0)
//	Recovery             0 (off)   fraction  —
//	MinIncrease          0         fraction  shaper_rate_min_adjust_up_load_high 1.0
//	MaxIncrease          0.04      fraction  shaper_rate_max_adjust_up_load_high 1.04
//	DecayStep            0.01      fraction  shaper_rate_adjust_{down,up}_load_low 0.99, 1.01
//	HighLoad             0.75      fraction  high_load_thr
//	CutRefractory        300 ms    time      bufferbloat_refractory_period_ms
//	IncreaseRefractory   200 ms    time      monitor_achieved_rates_interval_ms (see below)
//	DecayRefractory      1 s       time      decay_refractory_period_ms
//	PacketBytes          1500      bytes     the interface MTU plus overhead
//	Reflectors           8         count     no_pingers 6
//	ResponseDeadline     1 s       time      reflector_response_deadline_s
//	HealthInterval       1 s       time      reflector_health_check_interval_s
//	OffenceWindow        60        checks    reflector_misbehaving_detection_window
//	OffenceThreshold     3         checks    reflector_misbehaving_detection_thr
//	ComparisonInterval   1 min     time      reflector_comparison_interval_mins
//	BaselineSpread       20 ms     time      reflector_sum_owd_baselines_delta_thr_ms
//	DeltaSpread          10 ms     time      reflector_owd_delta_ewma_delta_thr_ms
//	RestTime             1 min     time      —
//	ProbeTimeout         10 s      time      global_ping_response_timeout_s
//
// # Differences from cake-autorate
//
//   - One Controller shapes one direction. cake-autorate runs download and
//     upload together and keeps the δ EWMA only while both directions'
//     loads are low; here only this direction's load counts. Feed a
//     direction's one-way delays, or round-trip times to both.
//   - Delays are judged as given. Fed round-trip times from ICMP echo,
//     cake-autorate takes half of each as both directions' one-way delay,
//     so its 30 ms threshold is a 60 ms rise in the round trip; feed half
//     the RTT for its behaviour, or the whole RTT for thresholds twice as
//     strict.
//   - Cuts scale the rate, as cake-autorate's since v3.1 do; its earlier
//     versions cut to the lower of 0.9 of the rate and 0.9 of the
//     achieved rate (when above the minimum), which AchievedCut brings
//     back on top of the scaled cut. It is off by default.
//   - A reflector's first sample sets its baseline; cake-autorate starts
//     every baseline at 100 ms and lets the fast fall pull it down.
//   - Recovery (off by default) is not cake-autorate's: there an increase
//     is at most shaper_rate_max_adjust_up_load_high of the rate.
//   - Increases have their own refractory period, IncreaseRefractory;
//     cake-autorate increases at most once per achieved-rate report (every
//     200 ms), which is kept as the rule that an increase needs a fresh
//     report. The two agree when reports come every 200 ms.
//   - A decay also waits out CutRefractory, so that nothing moves the rate
//     within CutRefractory of a cut whatever DecayRefractory is (with the
//     defaults the two rules agree: a cut restarts DecayRefractory there
//     too).
//   - A bad reflector is rested for RestTime and re-admitted, where
//     cake-autorate swaps it for a spare from its list; choosing, rotating
//     and sending to reflectors is the caller's.
//   - When probes stop for ProbeTimeout the rate falls to BaseRate.
//     cake-autorate holds it (or, with min_shaper_rates_enforcement, drops
//     to the minimum) and restarts its pingers. Its stall detection (no
//     probe and almost no traffic) needs no counterpart: without samples
//     nothing is decided.
//   - Time is int64 nanoseconds from the caller, not the script's clock;
//     a sample's age is the caller's business (cake-autorate skips replies
//     older than 500 ms). Rates are bits per second, not kbit/s, and the
//     arithmetic is floating point, not the script's integer millionths.
//   - Idle-time sleeping of the pingers, log output and the tc calls are
//     not the controller's.
//
// # Time
//
// Every method takes now, a monotonic [aqm.Time], and no method reads a
// clock. Time going backwards counts as no time elapsed: refractory periods
// and timeouts do not run and nothing moves back. Health checks run from
// whichever call comes first after HealthInterval, one per call whatever
// the gap.
//
// # Concurrency
//
// A Controller is not safe for concurrent use: drive it from one
// goroutine, the one that reads the probe replies and the counters. The
// Setter is called from that goroutine, inside Sample, Achieved or Tick.
package autorate
