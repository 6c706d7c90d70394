// redstudy: the RED-family cross-check of aqmkit's simulator, run in ns-3 3.37.
//
// One run of one variant (RED with gentle off, Gentle RED, Adaptive RED, or
// the disc as a plain drop-tail of its limit) on a
// dumbbell: N NewReno bulk senders, each on its own access link into router
// A, a 2 Mb/s bottleneck from A to router B, and N sinks behind B. The
// bottleneck device's own transmit queue holds a single packet, so that the
// backlog waits in the RED queue disc above it. The run prints one CSV row
// (with -header, the header first) and, on stderr, the RED parameters in
// effect after ns-3 derived its automatic ones.
//
// Written against the ns-3 3.37 API documentation; see README.md for the
// setup and how to build and run it.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// The study's setup. The simulator's red-family scenario (sim/redfamily.go)
// holds the same values.
struct Setup
{
    std::string variant = "red"; // red | gentle | ared | droptail
    uint32_t run = 1;            // ns-3 RngRun
    uint32_t flows = 10;
    std::string bottleneckRate = "2Mbps";
    double rttMs = 40;            // base RTT: propagation only, both ways
    double accessDelayMs = 1;     // each access link, one way
    std::string accessRate = "100Mbps";
    uint32_t segmentBytes = 536;  // TcpSocket SegmentSize
    uint32_t discLimit = 50;      // queue disc limit, packets
    uint32_t devicePackets = 1;   // the bottleneck device's own queue
    double minTh = 5, maxTh = 15; // packets (RED and Gentle RED; ARED derives the same)
    double qW = 0.002;            // RED and Gentle RED; ARED uses 1 - exp(-1/C)
    double lInterm = 50;          // max_p = 1/LInterm: 0.02
    double aredLInterm = 10;      // ARED's initial max_p 0.1
    double aredBottom = 0.01;     // ARED's lower bound on max_p, as the simulator's
    uint32_t meanPktBytes = 512;  // RED MeanPktSize: packet time for C and the idle decay
    bool wait = true;             // RED Wait (the ns-3 default)
    double startS = 1, startJitterS = 1; // flow i starts at 1 s + U[0, 1) s
    double warmupS = 10, durationS = 60; // window [warmup, duration)
    double sampleS = 0.010;              // queue sample period
    double binS = 0.100;                 // goodput bin for the time CoVs
};

double
Mean(const std::vector<double>& xs)
{
    if (xs.empty())
    {
        return 0;
    }
    double s = 0;
    for (double x : xs)
    {
        s += x;
    }
    return s / xs.size();
}

// CoV is the population standard deviation over the mean (0 if the mean is 0).
double
CoV(const std::vector<double>& xs)
{
    double m = Mean(xs);
    if (m == 0)
    {
        return 0;
    }
    double v = 0;
    for (double x : xs)
    {
        v += (x - m) * (x - m);
    }
    return std::sqrt(v / xs.size()) / m;
}

// P99 is the smallest sample with at least 99% of the samples at or below it.
double
P99(std::vector<double> xs)
{
    if (xs.empty())
    {
        return 0;
    }
    std::sort(xs.begin(), xs.end());
    size_t need = static_cast<size_t>(std::ceil(0.99 * xs.size()));
    return xs[std::max<size_t>(need, 1) - 1];
}

// Recorder holds what the run measures between the callbacks and the end.
struct Recorder
{
    Setup s;
    Ptr<QueueDisc> disc;
    Ptr<Queue<Packet>> device;
    std::vector<Ptr<PacketSink>> sinks;
    std::vector<uint64_t> rxAtWarmup;
    // bins[flow][k]: bytes delivered in order to flow's sink in bin k of the window.
    std::vector<std::vector<uint64_t>> bins;
    std::vector<double> discSamples, totalSamples;
    QueueDisc::Stats atWarmup;
};

Recorder g;

// With -traceUntil, every sender's socket reports its scoreboard changes on
// stderr until then, one line each: "trace <s> <flow> <what> <value>", what
// being cwnd, ssthresh, inflight (bytes), state (TcpSocketState::TcpCongState_t)
// or tx (the segment's first byte; value negative for a retransmission).
double traceUntil = 0;
std::vector<uint32_t> traceHighTx;

void
TraceLine(uint32_t flow, const char* what, double v)
{
    double t = Simulator::Now().GetSeconds();
    if (t < traceUntil)
    {
        std::fprintf(stderr, "trace %.6f %u %s %.0f\n", t, flow, what, v);
    }
}

void
OnCwnd(uint32_t flow, uint32_t, uint32_t v)
{
    TraceLine(flow, "cwnd", v);
}

void
OnSsthresh(uint32_t flow, uint32_t, uint32_t v)
{
    TraceLine(flow, "ssthresh", v);
}

void
OnInFlight(uint32_t flow, uint32_t, uint32_t v)
{
    TraceLine(flow, "inflight", v);
}

void
OnState(uint32_t flow, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v)
{
    TraceLine(flow, "state", v);
}

void
OnTx(uint32_t flow, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() == 0)
    {
        return;
    }
    uint32_t seq = h.GetSequenceNumber().GetValue();
    bool retx = seq < traceHighTx[flow];
    traceHighTx[flow] = std::max(traceHighTx[flow], seq + p->GetSize());
    TraceLine(flow, "tx", retx ? -double(seq) : double(seq));
}

void
ConnectTrace(uint32_t flow, uint32_t node)
{
    std::string base = "/NodeList/" + std::to_string(node) + "/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(base + "CongestionWindow", MakeBoundCallback(&OnCwnd, flow));
    Config::ConnectWithoutContext(base + "SlowStartThreshold", MakeBoundCallback(&OnSsthresh, flow));
    Config::ConnectWithoutContext(base + "BytesInFlight", MakeBoundCallback(&OnInFlight, flow));
    Config::ConnectWithoutContext(base + "CongState", MakeBoundCallback(&OnState, flow));
    Config::ConnectWithoutContext(base + "Tx", MakeBoundCallback(&OnTx, flow));
}

void
OnSinkRx(uint32_t flow, Ptr<const Packet> p, const Address&)
{
    double t = Simulator::Now().GetSeconds();
    if (t < g.s.warmupS || t >= g.s.durationS)
    {
        return;
    }
    size_t k = static_cast<size_t>((t - g.s.warmupS) / g.s.binS);
    if (k < g.bins[flow].size())
    {
        g.bins[flow][k] += p->GetSize();
    }
}

void
SampleQueue()
{
    double disc = g.disc->GetNPackets();
    g.discSamples.push_back(disc);
    g.totalSamples.push_back(disc + g.device->GetNPackets());
    Time next = Simulator::Now() + Seconds(g.s.sampleS);
    if (next < Seconds(g.s.durationS))
    {
        Simulator::Schedule(Seconds(g.s.sampleS), &SampleQueue);
    }
}

void
AtWarmup()
{
    for (size_t i = 0; i < g.sinks.size(); i++)
    {
        g.rxAtWarmup[i] = g.sinks[i]->GetTotalRx();
    }
    g.atWarmup = g.disc->GetStats();
    SampleQueue();
}

uint32_t
Dropped(const QueueDisc::Stats& st, const char* reason)
{
    return st.GetNDroppedPackets(reason);
}

// ConfigureRed sets RedQueueDisc's defaults for the chosen variant. Every
// attribute the study depends on is set, not left to ns-3's default.
bool
ConfigureRed(const Setup& s, DataRate rate, Time bottleneckDelay)
{
    Config::SetDefault("ns3::RedQueueDisc::MaxSize",
                       QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, s.discLimit)));
    Config::SetDefault("ns3::RedQueueDisc::MeanPktSize", UintegerValue(s.meanPktBytes));
    Config::SetDefault("ns3::RedQueueDisc::Wait", BooleanValue(s.wait));
    Config::SetDefault("ns3::RedQueueDisc::LinkBandwidth", DataRateValue(rate));
    Config::SetDefault("ns3::RedQueueDisc::LinkDelay", TimeValue(bottleneckDelay));
    Config::SetDefault("ns3::RedQueueDisc::UseEcn", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::UseHardDrop", BooleanValue(true));
    Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(s.minTh));
    Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(s.maxTh));
    Config::SetDefault("ns3::RedQueueDisc::QW", DoubleValue(s.qW));
    Config::SetDefault("ns3::RedQueueDisc::LInterm", DoubleValue(s.lInterm));
    Config::SetDefault("ns3::RedQueueDisc::ARED", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::AdaptMaxP", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::FengAdaptive", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::NLRED", BooleanValue(false));
    if (s.variant == "red")
    {
        Config::SetDefault("ns3::RedQueueDisc::Gentle", BooleanValue(false));
    }
    else if (s.variant == "droptail")
    {
        // The same disc with both thresholds above its limit: the average
        // (at most the limit) never reaches them, so only the limit drops.
        // It shows what the TCP alone does against a 50-packet tail drop.
        Config::SetDefault("ns3::RedQueueDisc::Gentle", BooleanValue(false));
        Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(2.0 * s.discLimit));
        Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(2.0 * s.discLimit));
    }
    else if (s.variant == "gentle")
    {
        Config::SetDefault("ns3::RedQueueDisc::Gentle", BooleanValue(true));
    }
    else if (s.variant == "ared")
    {
        // ARED zeroes MinTh, MaxTh and QW and derives them: min_th =
        // max(5, TargetDelay·C/2) = 5, max_th = 15, w_q = 1 - exp(-1/C),
        // with C = LinkBandwidth / (8·MeanPktSize) packets/s; it adapts
        // max_p every Interval from 1/LInterm within [Bottom, Top]. Bottom
        // 0 would mean min(0.01, 8·MeanPktSize·Rtt/LinkBandwidth) with the
        // Rtt attribute's 100 ms: 0.0002 here; the simulator's floor is 0.01.
        Config::SetDefault("ns3::RedQueueDisc::Gentle", BooleanValue(true));
        Config::SetDefault("ns3::RedQueueDisc::ARED", BooleanValue(true));
        Config::SetDefault("ns3::RedQueueDisc::LInterm", DoubleValue(s.aredLInterm));
        Config::SetDefault("ns3::RedQueueDisc::TargetDelay", TimeValue(MilliSeconds(5)));
        Config::SetDefault("ns3::RedQueueDisc::Interval", TimeValue(MilliSeconds(500)));
        Config::SetDefault("ns3::RedQueueDisc::Top", DoubleValue(0.5));
        Config::SetDefault("ns3::RedQueueDisc::Bottom", DoubleValue(s.aredBottom));
        Config::SetDefault("ns3::RedQueueDisc::Alpha", DoubleValue(0.01));
        Config::SetDefault("ns3::RedQueueDisc::Beta", DoubleValue(0.9));
    }
    else
    {
        return false;
    }
    return true;
}

double
DoubleAttr(Ptr<Object> o, const char* name)
{
    DoubleValue v;
    o->GetAttribute(name, v);
    return v.Get();
}

bool
BoolAttr(Ptr<Object> o, const char* name)
{
    BooleanValue v;
    o->GetAttribute(name, v);
    return v.Get();
}

} // namespace

int
main(int argc, char* argv[])
{
    Setup& s = g.s;
    bool header = false;
    CommandLine cmd(__FILE__);
    cmd.AddValue("variant", "red (gentle off), gentle, ared or droptail", s.variant);
    cmd.AddValue("run", "RngRun: the run's random substream", s.run);
    cmd.AddValue("flows", "number of bulk TCP flows", s.flows);
    cmd.AddValue("duration", "simulated seconds", s.durationS);
    cmd.AddValue("warmup", "start of the measurement window, seconds", s.warmupS);
    cmd.AddValue("rtt", "base RTT in ms (propagation, both ways)", s.rttMs);
    cmd.AddValue("limit", "queue disc limit, packets", s.discLimit);
    cmd.AddValue("device", "bottleneck device queue, packets (ns-3's default is 100)", s.devicePackets);
    cmd.AddValue("aredBottom", "ARED's lower bound on max_p (0: ns-3's automatic value)", s.aredBottom);
    cmd.AddValue("traceUntil", "trace every sender's scoreboard on stderr until this time, s", traceUntil);
    cmd.AddValue("header", "print the CSV header before the row", header);
    cmd.Parse(argc, argv);
    if (s.flows == 0 || s.flows > 250 || s.warmupS < 0 || s.durationS <= s.warmupS ||
        s.rttMs <= 4 * s.accessDelayMs || s.discLimit == 0 || s.devicePackets == 0)
    {
        std::cerr << "redstudy: need 0 < flows <= 250, 0 <= warmup < duration, rtt > "
                  << 4 * s.accessDelayMs << " ms, limit > 0 and device > 0\n";
        return 2;
    }

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(s.run);

    DataRate rate(s.bottleneckRate);
    Time bottleneckDelay = Seconds((s.rttMs / 2 - 2 * s.accessDelayMs) / 1000);
    if (!ConfigureRed(s, rate, bottleneckDelay))
    {
        std::cerr << "redstudy: unknown variant \"" << s.variant << "\" (want red, gentle, ared or droptail)\n";
        return 2;
    }

    // TCP: ns-3 3.37's socket with NewReno and the study's segment size;
    // SACK, timestamps, delayed ACKs (every 2nd segment, 200 ms), PRR,
    // initial window 10 and the 1 s minimum RTO are 3.37's defaults, named
    // here so that a change of default cannot move the numbers.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(s.segmentBytes));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpPrrRecovery::GetTypeId()));

    NodeContainer senders, routers, receivers;
    senders.Create(s.flows);
    routers.Create(2);
    receivers.Create(s.flows);
    InternetStackHelper internet;
    internet.InstallAll();

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue(s.accessRate));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(s.accessDelayMs / 1000)));

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(bottleneckDelay));
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>",
                        "MaxSize",
                        QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, s.devicePackets)));

    // Every device but the bottleneck's forward one gets a plain 1000-packet
    // FIFO disc (nothing queues there: the access links are 50 times faster
    // and the reverse bottleneck carries only ACKs). Discs are installed
    // before addresses so that ns-3 adds no default one.
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc",
                          "MaxSize",
                          QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1000)));
    TrafficControlHelper red;
    red.SetRootQueueDisc("ns3::RedQueueDisc");

    Ipv4AddressHelper addr;
    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
    QueueDiscContainer redDiscs = red.Install(core.Get(0));
    fifo.Install(core.Get(1));
    addr.SetBase("10.0.0.0", "255.255.255.252");
    addr.Assign(core);

    std::vector<Ipv4Address> sinkAddr;
    for (uint32_t i = 0; i < s.flows; i++)
    {
        NetDeviceContainer left = access.Install(senders.Get(i), routers.Get(0));
        NetDeviceContainer right = access.Install(routers.Get(1), receivers.Get(i));
        fifo.Install(left);
        fifo.Install(right);
        char base[32];
        std::snprintf(base, sizeof base, "10.1.%u.0", i);
        addr.SetBase(base, "255.255.255.0");
        addr.Assign(left);
        std::snprintf(base, sizeof base, "10.2.%u.0", i);
        addr.SetBase(base, "255.255.255.0");
        sinkAddr.push_back(addr.Assign(right).GetAddress(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    g.disc = redDiscs.Get(0);
    g.device = DynamicCast<PointToPointNetDevice>(core.Get(0))->GetQueue();

    Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
    jitter->SetAttribute("Min", DoubleValue(0));
    jitter->SetAttribute("Max", DoubleValue(s.startJitterS));

    const uint16_t port = 5000;
    size_t nbins = static_cast<size_t>(std::ceil((s.durationS - s.warmupS) / s.binS - 1e-9));
    g.bins.assign(s.flows, std::vector<uint64_t>(nbins, 0));
    g.rxAtWarmup.assign(s.flows, 0);
    for (uint32_t i = 0; i < s.flows; i++)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(i));
        sinkApp.Start(Seconds(0));
        Ptr<PacketSink> sink = DynamicCast<PacketSink>(sinkApp.Get(0));
        sink->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnSinkRx, i));
        g.sinks.push_back(sink);

        BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(sinkAddr[i], port));
        source.SetAttribute("MaxBytes", UintegerValue(0));
        source.SetAttribute("SendSize", UintegerValue(s.segmentBytes));
        ApplicationContainer sourceApp = source.Install(senders.Get(i));
        double start = s.startS + jitter->GetValue();
        sourceApp.Start(Seconds(start));
        if (traceUntil > 0)
        {
            traceHighTx.push_back(0);
            Simulator::Schedule(Seconds(start) + NanoSeconds(1),
                                &ConnectTrace,
                                i,
                                senders.Get(i)->GetId());
        }
    }

    Simulator::Schedule(Seconds(s.warmupS), &AtWarmup);
    Simulator::Stop(Seconds(s.durationS));
    Simulator::Run();

    // Goodput: bytes each sink's application received (in order) in the window.
    double window = s.durationS - s.warmupS;
    std::vector<double> flowMbps;
    double totalMbps = 0;
    for (uint32_t i = 0; i < s.flows; i++)
    {
        double mbps = (g.sinks[i]->GetTotalRx() - g.rxAtWarmup[i]) * 8.0 / window / 1e6;
        flowMbps.push_back(mbps);
        totalMbps += mbps;
    }
    std::vector<double> agg(nbins, 0);
    std::vector<double> flowBinCoV;
    for (uint32_t i = 0; i < s.flows; i++)
    {
        std::vector<double> b(nbins);
        for (size_t k = 0; k < nbins; k++)
        {
            b[k] = g.bins[i][k];
            agg[k] += g.bins[i][k];
        }
        flowBinCoV.push_back(CoV(b));
    }

    QueueDisc::Stats st = g.disc->GetStats();
    uint32_t early = Dropped(st, RedQueueDisc::UNFORCED_DROP);
    uint32_t forced = Dropped(st, RedQueueDisc::FORCED_DROP);
    uint32_t overflow = Dropped(st, QueueDisc::INTERNAL_QUEUE_DROP);
    uint32_t total = st.nTotalDroppedPackets;
    uint32_t windowDrops = total - g.atWarmup.nTotalDroppedPackets;
    // Utilization of the bottleneck: bytes the disc handed to the device in the window.
    double util = (st.nTotalSentBytes - g.atWarmup.nTotalSentBytes) * 8.0 / window /
                  rate.GetBitRate();

    if (header)
    {
        std::cout << "variant,run,drops,early,forced,overflow,drops_window,goodput_mbps,"
                     "utilization,disc_q_mean,disc_q_p99,total_q_mean,total_q_p99,"
                     "cov_flows,cov_agg_100ms,cov_flow_100ms,min_th,max_th,qw\n";
    }
    std::printf("%s,%u,%u,%u,%u,%u,%u,%.4f,%.4f,%.3f,%.0f,%.3f,%.0f,%.4f,%.4f,%.4f,%g,%g,%.6f\n",
                s.variant.c_str(),
                s.run,
                total,
                early,
                forced,
                overflow,
                windowDrops,
                totalMbps,
                util,
                Mean(g.discSamples),
                P99(g.discSamples),
                Mean(g.totalSamples),
                P99(g.totalSamples),
                CoV(flowMbps),
                CoV(agg),
                Mean(flowBinCoV),
                DoubleAttr(g.disc, "MinTh"),
                DoubleAttr(g.disc, "MaxTh"),
                DoubleAttr(g.disc, "QW"));
    std::fprintf(stderr,
                 "redstudy %s run %u: MinTh %g MaxTh %g QW %.6f LInterm %g Gentle %d ARED %d "
                 "AdaptMaxP %d Bottom %g Wait %d; dropped %u (early %u, forced %u, overflow %u, other %u)\n",
                 s.variant.c_str(),
                 s.run,
                 DoubleAttr(g.disc, "MinTh"),
                 DoubleAttr(g.disc, "MaxTh"),
                 DoubleAttr(g.disc, "QW"),
                 DoubleAttr(g.disc, "LInterm"),
                 BoolAttr(g.disc, "Gentle"),
                 BoolAttr(g.disc, "ARED"),
                 BoolAttr(g.disc, "AdaptMaxP"),
                 DoubleAttr(g.disc, "Bottom"),
                 BoolAttr(g.disc, "Wait"),
                 total,
                 early,
                 forced,
                 overflow,
                 total - early - forced - overflow);
    Simulator::Destroy();
    return 0;
}
