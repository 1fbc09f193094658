// The learning-rate schedulers of torch.optim.lr_scheduler that LibTorch 1.13 lacks
// (ppe/optim/lr_scheduler/*.hpp), checked against PyTorch 1.13: rates (and momenta) for 50 steps,
// the state layout after 7 steps, a pickled resume mid-schedule, step(epoch)'s closed forms, the
// errors, and runs under the LRScheduler extension.
//
// The reference numbers below were printed once by PyTorch 1.13 (/usr/bin/python3, torch
// 1.13.0a0, Debian 12) with `repr`, which round-trips doubles, and are compared exactly: the
// schedulers repeat Python's operations in Python's order on the same libm. Each table row i holds the param groups' rates (then momenta, where given) after construction
// (row 0) and after i calls of `scheduler.step()`. Settings, for one parameter per group:
//   kStepLR:           SGD(lr=0.1);  StepLR(opt, 3, 0.5)
//   kMultiStepLR:      SGD(lr=0.1);  MultiStepLR(opt, [5, 15, 15, 30], 0.5)
//   kExponentialLR:    SGD(lr=0.1);  ExponentialLR(opt, 0.9)
//   kLambdaLR:         SGD, groups lr 0.1 and 0.05;  LambdaLR(opt, [lambda e: 0.95 ** e, lambda e: 1 / (1 + e)])
//   kCosineAnnealingLR: SGD(lr=0.1);  CosineAnnealingLR(opt, 10, 0.001)
//   kCosineAnnealingWarmRestarts: SGD(lr=0.1);  CosineAnnealingWarmRestarts(opt, 5, 2, 0.001)
//   kLinearLR:         SGD(lr=0.1);  LinearLR(opt, 0.25, 1.0, 8)
//   kOneCycleLR:       SGD(lr=0.1, momentum=0.9);  OneCycleLR(opt, 1.0, total_steps=50); columns lr, momentum
//   kOneCycleLR3:      Adam, groups lr 0.001 and 0.001;  OneCycleLR(opt, [0.01, 0.02], epochs=5,
//                      steps_per_epoch=10, pct_start=0.25, anneal_strategy='linear', base_momentum=0.8,
//                      max_momentum=0.9, div_factor=10.0, final_div_factor=100.0, three_phase=True);
//                      columns lr0, lr1, beta1 of group 0, of group 1
//   kSequentialLR:     SGD(lr=0.1);  SequentialLR(opt, [LinearLR(opt, 0.1, 1.0, 5),
//                      CosineAnnealingLR(opt, 20, 0.001), StepLR(opt, 5, 0.5)], [5, 25])
//                      (the three built in this order before the SequentialLR)
// The states after 7 steps are Python's `scheduler.state_dict()` then, key for key, except
// MultiStepLR's Counter (a dict here) and OneCycleLR's `anneal_func` (a bound method, left out).
#include "ppe_test.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <ppe/optim.hpp>
#include <ppe/training/extensions/lr_scheduler.hpp>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_optim_tests_test_lr_scheduler {

namespace sch = ppe::optim::lr_scheduler;
namespace tr = ppe::training;
namespace ext = ppe::training::extensions;
using S = ppe::State;

namespace {

// clang-format off
constexpr double kStepLR[51][1] = {
    {0.1}, {0.1}, {0.1}, {0.05}, {0.05}, {0.05}, {0.025}, {0.025}, {0.025}, {0.0125}, {0.0125}, {0.0125}, {0.00625},
    {0.00625}, {0.00625}, {0.003125}, {0.003125}, {0.003125}, {0.0015625}, {0.0015625}, {0.0015625}, {0.00078125},
    {0.00078125}, {0.00078125}, {0.000390625}, {0.000390625}, {0.000390625}, {0.0001953125}, {0.0001953125},
    {0.0001953125}, {9.765625e-05}, {9.765625e-05}, {9.765625e-05}, {4.8828125e-05}, {4.8828125e-05},
    {4.8828125e-05}, {2.44140625e-05}, {2.44140625e-05}, {2.44140625e-05}, {1.220703125e-05}, {1.220703125e-05},
    {1.220703125e-05}, {6.103515625e-06}, {6.103515625e-06}, {6.103515625e-06}, {3.0517578125e-06},
    {3.0517578125e-06}, {3.0517578125e-06}, {1.52587890625e-06}, {1.52587890625e-06}, {1.52587890625e-06},
};
constexpr double kMultiStepLR[51][1] = {
    {0.1}, {0.1}, {0.1}, {0.1}, {0.1}, {0.05}, {0.05}, {0.05}, {0.05}, {0.05}, {0.05}, {0.05}, {0.05}, {0.05},
    {0.05}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125},
    {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625},
    {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625},
    {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625}, {0.00625},
};
constexpr double kExponentialLR[51][1] = {
    {0.1}, {0.09000000000000001}, {0.08100000000000002}, {0.07290000000000002}, {0.06561000000000002},
    {0.05904900000000002}, {0.05314410000000002}, {0.04782969000000002}, {0.043046721000000024},
    {0.03874204890000002}, {0.03486784401000002}, {0.03138105960900001}, {0.028242953648100012},
    {0.025418658283290013}, {0.022876792454961013}, {0.020589113209464913}, {0.01853020188851842},
    {0.01667718169966658}, {0.015009463529699923}, {0.013508517176729932}, {0.01215766545905694},
    {0.010941898913151246}, {0.009847709021836121}, {0.00886293811965251}, {0.007976644307687259},
    {0.007178979876918534}, {0.006461081889226681}, {0.005814973700304013}, {0.005233476330273611},
    {0.00471012869724625}, {0.004239115827521626}, {0.0038152042447694634}, {0.003433683820292517},
    {0.0030903154382632653}, {0.002781283894436939}, {0.002503155504993245}, {0.0022528399544939205},
    {0.0020275559590445286}, {0.0018248003631400759}, {0.0016423203268260682}, {0.0014780882941434613},
    {0.0013302794647291152}, {0.0011972515182562037}, {0.0010775263664305832}, {0.000969773729787525},
    {0.0008727963568087724}, {0.0007855167211278952}, {0.0007069650490151057}, {0.0006362685441135952},
    {0.0005726416897022357}, {0.0005153775207320121},
};
constexpr double kLambdaLR[51][2] = {
    {0.1, 0.05}, {0.095, 0.025}, {0.09025, 0.016666666666666666}, {0.0857375, 0.0125},
    {0.081450625, 0.010000000000000002}, {0.07737809374999999, 0.008333333333333333},
    {0.07350918906249998, 0.007142857142857143}, {0.06983372960937498, 0.00625},
    {0.06634204312890622, 0.005555555555555556}, {0.0630249409724609, 0.005000000000000001},
    {0.05987369392383787, 0.004545454545454546}, {0.05688000922764597, 0.004166666666666667},
    {0.05403600876626367, 0.0038461538461538464}, {0.051334208327950485, 0.0035714285714285713},
    {0.04876749791155296, 0.0033333333333333335}, {0.046329123015975304, 0.003125},
    {0.04401266686517654, 0.0029411764705882353}, {0.04181203352191771, 0.002777777777777778},
    {0.039721431845821824, 0.002631578947368421}, {0.03773536025353073, 0.0025000000000000005},
    {0.03584859224085419, 0.002380952380952381}, {0.03405616262881148, 0.002272727272727273},
    {0.0323533544973709, 0.002173913043478261}, {0.03073568677250236, 0.0020833333333333333},
    {0.02919890243387724, 0.002}, {0.027738957312183378, 0.0019230769230769232},
    {0.026352009446574204, 0.001851851851851852}, {0.025034408974245494, 0.0017857142857142857},
    {0.023782688525533217, 0.0017241379310344827}, {0.022593554099256556, 0.0016666666666666668},
    {0.02146387639429373, 0.0016129032258064516}, {0.02039068257457904, 0.0015625},
    {0.019371148445850087, 0.0015151515151515154}, {0.018402591023557582, 0.0014705882352941176},
    {0.017482461472379703, 0.0014285714285714286}, {0.016608338398760716, 0.001388888888888889},
    {0.01577792147882268, 0.0013513513513513514}, {0.014989025404881546, 0.0013157894736842105},
    {0.014239574134637467, 0.001282051282051282}, {0.013527595427905593, 0.0012500000000000002},
    {0.012851215656510312, 0.0012195121951219514}, {0.012208654873684797, 0.0011904761904761906},
    {0.011598222130000557, 0.0011627906976744186}, {0.011018311023500529, 0.0011363636363636365},
    {0.010467395472325502, 0.0011111111111111111}, {0.009944025698709225, 0.0010869565217391304},
    {0.009446824413773765, 0.0010638297872340426}, {0.008974483193085076, 0.0010416666666666667},
    {0.00852575903343082, 0.001020408163265306}, {0.00809947108175928, 0.001},
    {0.007694497527671315, 0.000980392156862745},
};
constexpr double kCosineAnnealingLR[51][1] = {
    {0.1}, {0.09757729755661011}, {0.0905463412215599}, {0.07959536998847742}, {0.0657963412215599}, {0.0505},
    {0.03520365877844011}, {0.02140463001152259}, {0.010453658778440109}, {0.0034227024433899004}, {0.001},
    {0.0034227024433899004}, {0.01045365877844014}, {0.02140463001152267}, {0.035203658778440255},
    {0.05050000000000022}, {0.06579634122156018}, {0.07959536998847777}, {0.09054634122156031},
    {0.09757729755661054}, {0.10000000000000045}, {0.09757729755661054}, {0.09054634122156033},
    {0.07959536998847778}, {0.0657963412215602}, {0.050500000000000225}, {0.03520365877844027},
    {0.021404630011522683}, {0.010453658778440154}, {0.003422702443389916}, {0.001}, {0.0034227024433899004},
    {0.010453658778440112}, {0.021404630011522607}, {0.03520365877844015}, {0.050500000000000086},
    {0.06579634122156003}, {0.07959536998847759}, {0.09054634122156009}, {0.09757729755661032},
    {0.10000000000000024}, {0.09757729755661038}, {0.09054634122156012}, {0.07959536998847763},
    {0.06579634122156017}, {0.05050000000000014}, {0.035203658778440214}, {0.021404630011522582},
    {0.010453658778440143}, {0.00342270244338994}, {0.001},
};
constexpr double kCosineAnnealingWarmRestarts[51][1] = {
    {0.1}, {0.0905463412215599}, {0.0657963412215599}, {0.03520365877844011}, {0.010453658778440109}, {0.1},
    {0.09757729755661011}, {0.0905463412215599}, {0.07959536998847742}, {0.0657963412215599}, {0.0505},
    {0.03520365877844011}, {0.021404630011522586}, {0.010453658778440109}, {0.0034227024433899004}, {0.1},
    {0.09939057285945932}, {0.09757729755661011}, {0.09460482294732421}, {0.0905463412215599}, {0.0855017856687341},
    {0.07959536998847742}, {0.07297252973710756}, {0.0657963412215599}, {0.05824350601949144}, {0.0505},
    {0.04275649398050859}, {0.03520365877844011}, {0.02802747026289244}, {0.021404630011522586},
    {0.0154982143312659}, {0.010453658778440109}, {0.0063951770526757944}, {0.0034227024433899004},
    {0.001609427140540686}, {0.1}, {0.09984740801978985}, {0.09939057285945932}, {0.098632311059685},
    {0.09757729755661011}, {0.0962320368593087}, {0.09460482294732421}, {0.09270568813552757}, {0.0905463412215599},
    {0.08814009529720154}, {0.0855017856687341}, {0.0826476783923441}, {0.07959536998847742}, {0.07636367895343947},
    {0.07297252973710756}, {0.06944282990207196},
};
constexpr double kLinearLR[51][1] = {
    {0.025}, {0.034375}, {0.043750000000000004}, {0.053125}, {0.0625}, {0.071875}, {0.08124999999999999},
    {0.090625}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
    {0.09999999999999999}, {0.09999999999999999}, {0.09999999999999999},
};
constexpr double kOneCycleLR[51][2] = {
    {0.040000000000000036, 0.95}, {0.05203460215272471, 0.9487463956090911},
    {0.08753494340683887, 0.945048443395121}, {0.1447208884153457, 0.9390915741234015},
    {0.2207248951078079, 0.9311744900929366}, {0.31173580522357214, 0.9216941869558779},
    {0.41318995170096917, 0.9111260466978157}, {0.52, 0.8999999999999999}, {0.6268100482990309, 0.8888739533021842},
    {0.7282641947764279, 0.878305813044122}, {0.819275104892192, 0.8688255099070633},
    {0.8952791115846543, 0.8609084258765984}, {0.9524650565931612, 0.854951556604879},
    {0.9879653978472753, 0.8512536043909088}, {1.0, 0.85}, {0.9979871550490316, 0.850201285300238},
    {0.9919648264401376, 0.8508035205700685}, {0.9819815024222053, 0.8518018569652073},
    {0.9681175628501273, 0.8531882564680131}, {0.9504846320134737, 0.854951556604879},
    {0.9292246799033459, 0.8570775603199067}, {0.904508879153485, 0.8595491502812526},
    {0.8765362268588736, 0.8623464266998194}, {0.8455319423681344, 0.8654468675506567},
    {0.8117456539497631, 0.8688255099070633}, {0.7754493889320884, 0.8724551509273948},
    {0.7369353834991744, 0.87630656687635}, {0.6965137297768985, 0.8803487484173038},
    {0.654509879153485, 0.8845491502812526}, {0.6112620219362893, 0.8888739533021842},
    {0.5671183644422961, 0.8932883367091172}, {0.5224343254455969, 0.8977567584824742},
    {0.4775696745544034, 0.9022432415175257}, {0.43288563555770404, 0.9067116632908827},
    {0.38874197806371075, 0.9111260466978157}, {0.3454941208465151, 0.9154508497187474},
    {0.30349027022310154, 0.9196512515826961}, {0.26306861650082564, 0.9236934331236499},
    {0.2245546110679117, 0.927544849072605}, {0.18825834605023697, 0.9311744900929366},
    {0.15447205763186567, 0.9345531324493432}, {0.12346777314112659, 0.9376535733001805},
    {0.09549512084651508, 0.9404508497187474}, {0.07077932009665416, 0.9429224396800933},
    {0.049519367986526286, 0.945048443395121}, {0.03188643714987267, 0.9468117435319868},
    {0.018022497577794772, 0.9481981430347927}, {0.008039173559862363, 0.9491964794299315},
    {0.0020168449509684566, 0.949798714699762}, {4e-06, 0.95}, {0.0020168449509684566, 0.949798714699762},
};
constexpr double kOneCycleLR3[51][4] = {
    {0.001, 0.002, 0.9, 0.9}, {0.001782608695652174, 0.003565217391304348, 0.891304347826087, 0.891304347826087},
    {0.002565217391304348, 0.005130434782608696, 0.8826086956521739, 0.8826086956521739},
    {0.0033478260869565218, 0.0066956521739130435, 0.8739130434782609, 0.8739130434782609},
    {0.004130434782608695, 0.00826086956521739, 0.8652173913043478, 0.8652173913043478},
    {0.00491304347826087, 0.00982608695652174, 0.8565217391304348, 0.8565217391304348},
    {0.0056956521739130435, 0.011391304347826087, 0.8478260869565217, 0.8478260869565217},
    {0.006478260869565218, 0.012956521739130436, 0.8391304347826087, 0.8391304347826087},
    {0.007260869565217392, 0.014521739130434783, 0.8304347826086957, 0.8304347826086957},
    {0.008043478260869565, 0.01608695652173913, 0.8217391304347826, 0.8217391304347826},
    {0.00882608695652174, 0.01765217391304348, 0.8130434782608696, 0.8130434782608696},
    {0.009608695652173916, 0.019217391304347832, 0.8043478260869565, 0.8043478260869565},
    {0.009608695652173913, 0.019217391304347825, 0.8043478260869565, 0.8043478260869565},
    {0.008826086956521739, 0.017652173913043478, 0.8130434782608696, 0.8130434782608696},
    {0.008043478260869565, 0.01608695652173913, 0.8217391304347826, 0.8217391304347826},
    {0.007260869565217392, 0.014521739130434783, 0.8304347826086957, 0.8304347826086957},
    {0.006478260869565217, 0.012956521739130434, 0.8391304347826087, 0.8391304347826087},
    {0.005695652173913043, 0.011391304347826085, 0.8478260869565217, 0.8478260869565217},
    {0.00491304347826087, 0.00982608695652174, 0.8565217391304348, 0.8565217391304348},
    {0.004130434782608695, 0.00826086956521739, 0.8652173913043478, 0.8652173913043478},
    {0.0033478260869565218, 0.0066956521739130435, 0.8739130434782609, 0.8739130434782609},
    {0.0025652173913043473, 0.0051304347826086946, 0.8826086956521739, 0.8826086956521739},
    {0.0017826086956521728, 0.0035652173913043456, 0.8913043478260869, 0.8913043478260869},
    {0.0009999999999999992, 0.0019999999999999983, 0.9, 0.9},
    {0.0009619230769230769, 0.0019238461538461538, 0.9, 0.9},
    {0.0009238461538461539, 0.0018476923076923078, 0.9, 0.9},
    {0.0008857692307692308, 0.0017715384615384615, 0.9, 0.9},
    {0.0008476923076923078, 0.0016953846153846155, 0.9, 0.9},
    {0.0008096153846153846, 0.0016192307692307693, 0.9, 0.9},
    {0.0007715384615384615, 0.001543076923076923, 0.9, 0.9},
    {0.0007334615384615385, 0.001466923076923077, 0.9, 0.9},
    {0.0006953846153846154, 0.0013907692307692308, 0.9, 0.9},
    {0.0006573076923076923, 0.0013146153846153846, 0.9, 0.9},
    {0.0006192307692307693, 0.0012384615384615385, 0.9, 0.9},
    {0.0005811538461538463, 0.0011623076923076925, 0.9, 0.9},
    {0.000543076923076923, 0.001086153846153846, 0.9, 0.9}, {0.000505, 0.00101, 0.9, 0.9},
    {0.000466923076923077, 0.000933846153846154, 0.9, 0.9},
    {0.0004288461538461539, 0.0008576923076923078, 0.9, 0.9},
    {0.0003907692307692308, 0.0007815384615384616, 0.9, 0.9},
    {0.00035269230769230766, 0.0007053846153846153, 0.9, 0.9},
    {0.00031461538461538465, 0.0006292307692307693, 0.9, 0.9},
    {0.00027653846153846164, 0.0005530769230769233, 0.9, 0.9},
    {0.0002384615384615384, 0.0004769230769230768, 0.9, 0.9},
    {0.0002003846153846154, 0.0004007692307692308, 0.9, 0.9},
    {0.0001623076923076924, 0.0003246153846153848, 0.9, 0.9},
    {0.00012423076923076927, 0.00024846153846153855, 0.9, 0.9},
    {8.615384615384615e-05, 0.0001723076923076923, 0.9, 0.9},
    {4.8076923076923036e-05, 9.615384615384607e-05, 0.9, 0.9},
    {1.0000000000000026e-05, 2.0000000000000052e-05, 0.9, 0.9},
    {-2.80769230769232e-05, -5.61538461538464e-05, 0.9, 0.9},
};
constexpr double kSequentialLR[51][1] = {
    {0.010000000000000002}, {0.028000000000000004}, {0.046000000000000006}, {0.064}, {0.082}, {0.1},
    {0.09939057285945932}, {0.09757729755661011}, {0.09460482294732421}, {0.09054634122155991},
    {0.0855017856687341}, {0.07959536998847742}, {0.07297252973710756}, {0.0657963412215599}, {0.05824350601949144},
    {0.0505}, {0.04275649398050859}, {0.03520365877844011}, {0.02802747026289244}, {0.02140463001152259},
    {0.015498214331265903}, {0.010453658778440109}, {0.006395177052675795}, {0.0034227024433899004},
    {0.001609427140540686}, {0.1}, {0.1}, {0.1}, {0.1}, {0.1}, {0.05}, {0.05}, {0.05}, {0.05}, {0.05}, {0.025},
    {0.025}, {0.025}, {0.025}, {0.025}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.0125}, {0.00625}, {0.00625},
    {0.00625}, {0.00625}, {0.00625}, {0.003125},
};
// clang-format on

/// The base keys Python's `_LRScheduler` adds after a class's own (verbose False, as built here).
S with_base(S own, std::vector<double> base_lrs, std::int64_t last_epoch, std::int64_t step_count,
            std::vector<double> last_lr) {
  const auto list = [](const std::vector<double>& v) {
    S::List l;
    for (double x : v) l.emplace_back(x);
    return S(std::move(l));
  };
  own.set("base_lrs", list(base_lrs));
  own.set("last_epoch", last_epoch);
  own.set("verbose", false);
  own.set("_step_count", step_count);
  own.set("_get_lr_called_within_step", false);
  own.set("_last_lr", list(last_lr));
  return own;
}

S phase(S end_step, const char* start_lr, const char* end_lr, const char* start_m, const char* end_m) {
  return S::dict({{"end_step", std::move(end_step)},
                  {"start_lr", start_lr},
                  {"end_lr", end_lr},
                  {"start_momentum", start_m},
                  {"end_momentum", end_m}});
}

template <class O, class Options>
std::unique_ptr<O> make_optimizer(const std::vector<double>& lrs, const Options& defaults) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : lrs) {
    auto options = std::make_unique<Options>(defaults);
    options->lr(lr);
    groups.emplace_back(std::vector<torch::Tensor>{torch::zeros({2}, torch::requires_grad())}, std::move(options));
  }
  return std::make_unique<O>(std::move(groups), defaults);
}

/// An optimizer and its scheduler (or SequentialLR over several), as in one Python setting.
struct Rig {
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::vector<std::unique_ptr<sch::LRScheduler>> parts;
  std::unique_ptr<sch::SequentialLR> seq;
  int momentum = 0;  // table columns after the rates: 1 SGD momentum, 2 Adam's first beta
  std::function<S()> save_opt;
  std::function<void(const S&)> load_opt;

  template <class O, class Options>
  void optimizer(const std::vector<double>& lrs, const Options& defaults) {
    auto o = make_optimizer<O>(lrs, defaults);
    O* typed = o.get();
    save_opt = [typed] { return ppe::serialization::optimizer_state_dict(*typed); };
    load_opt = [typed](const S& s) { ppe::serialization::optimizer_load_state_dict(*typed, s, "opt"); };
    opt = std::move(o);
  }
  template <class T, class... A>
  T& add(A&&... args) {
    parts.push_back(std::make_unique<T>(*opt, std::forward<A>(args)...));
    return static_cast<T&>(*parts.back());
  }
  void sequential(std::vector<std::int64_t> milestones) {
    std::vector<std::reference_wrapper<sch::LRScheduler>> refs;
    for (auto& p : parts) refs.emplace_back(*p);
    seq = std::make_unique<sch::SequentialLR>(*opt, refs, std::move(milestones));
  }
  void step() { seq ? seq->step() : parts.back()->step(); }
  S state() const { return seq ? seq->state_dict() : parts.back()->state_dict(); }
  void load(const S& s) { seq ? seq->load_state_dict(s) : parts.back()->load_state_dict(s); }
  std::vector<double> row() const {
    std::vector<double> out;
    for (auto& g : opt->param_groups()) out.push_back(g.options().get_lr());
    for (auto& g : opt->param_groups()) {
      if (momentum == 1) out.push_back(static_cast<torch::optim::SGDOptions&>(g.options()).momentum());
      if (momentum == 2) out.push_back(std::get<0>(static_cast<torch::optim::AdamOptions&>(g.options()).betas()));
    }
    return out;
  }
};

struct Case {
  const char* name;
  std::function<void(Rig&)> build;
  const double* table;  // 51 rows of `cols`
  std::size_t cols;
  S state7;  // Python's state after 7 steps
};

template <std::size_t N>
const double* rows(const double (&t)[51][N]) {
  return &t[0][0];
}

std::vector<Case> cases() {
  using sgd = torch::optim::SGDOptions;
  return {
      {"StepLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::StepLR>(3, 0.5);
       },
       rows(kStepLR), 1, with_base(S::dict({{"step_size", 3}, {"gamma", 0.5}}), {0.1}, 7, 8, {0.025})},
      {"MultiStepLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::MultiStepLR>(std::vector<std::int64_t>{5, 15, 15, 30}, sch::MultiStepLROptions().gamma(0.5));
       },
       rows(kMultiStepLR), 1,
       [] {
         S counter = S::int_dict();  // Python's Counter({5: 1, 15: 2, 30: 1})
         counter.set("5", 1);
         counter.set("15", 2);
         counter.set("30", 1);
         return with_base(S::dict({{"milestones", counter}, {"gamma", 0.5}}), {0.1}, 7, 8, {0.05});
       }()},
      {"ExponentialLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::ExponentialLR>(0.9);
       },
       rows(kExponentialLR), 1, with_base(S::dict({{"gamma", 0.9}}), {0.1}, 7, 8, {0.04782969000000002})},
      {"LambdaLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1, 0.05}, sgd(0.1));
         r.add<sch::LambdaLR>(
             std::vector<sch::LambdaLR::Lambda>{[](std::int64_t e) { return std::pow(0.95, static_cast<double>(e)); },
                                                [](std::int64_t e) { return 1.0 / static_cast<double>(1 + e); }});
       },
       rows(kLambdaLR), 2,
       [] {
         S s = with_base(S::dict(), {0.1, 0.05}, 7, 8, {0.06983372960937498, 0.00625});
         s.set("lr_lambdas", S::list({S(), S()}));
         return s;
       }()},
      {"CosineAnnealingLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::CosineAnnealingLR>(10, sch::CosineAnnealingLROptions().eta_min(0.001));
       },
       rows(kCosineAnnealingLR), 1,
       with_base(S::dict({{"T_max", 10}, {"eta_min", 0.001}}), {0.1}, 7, 8, {0.02140463001152259})},
      {"CosineAnnealingWarmRestarts",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::CosineAnnealingWarmRestarts>(5, sch::CosineAnnealingWarmRestartsOptions().T_mult(2).eta_min(0.001));
       },
       rows(kCosineAnnealingWarmRestarts), 1,
       // Python's CosineAnnealingWarmRestarts.step never counts _step_count.
       with_base(S::dict({{"T_0", 5}, {"T_i", 10}, {"T_mult", 2}, {"eta_min", 0.001}, {"T_cur", 2}}), {0.1}, 7, 0,
                 {0.0905463412215599})},
      {"LinearLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::LinearLR>(sch::LinearLROptions().start_factor(0.25).end_factor(1.0).total_iters(8));
       },
       rows(kLinearLR), 1,
       with_base(S::dict({{"start_factor", 0.25}, {"end_factor", 1.0}, {"total_iters", 8}}), {0.1}, 7, 8, {0.090625})},
      {"OneCycleLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1).momentum(0.9));
         r.momentum = 1;
         r.add<sch::OneCycleLR>(1.0, sch::OneCycleLROptions().total_steps(50));
       },
       rows(kOneCycleLR), 2,
       with_base(
           S::dict({{"total_steps", 50},
                    {"_schedule_phases", S::list({phase(14.0, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                                                  phase(49, "max_lr", "min_lr", "base_momentum", "max_momentum")})},
                    {"cycle_momentum", true},
                    {"use_beta1", false}}),
           {0.04}, 7, 8, {0.52})},
      {"OneCycleLR3",
       [](Rig& r) {
         r.optimizer<torch::optim::Adam>({0.001, 0.001}, torch::optim::AdamOptions(0.001));
         r.momentum = 2;
         r.add<sch::OneCycleLR>(sch::PerGroup{0.01, 0.02}, sch::OneCycleLROptions()
                                                               .epochs(5)
                                                               .steps_per_epoch(10)
                                                               .pct_start(0.25)
                                                               .anneal_strategy("linear")
                                                               .base_momentum(0.8)
                                                               .max_momentum(0.9)
                                                               .div_factor(10.0)
                                                               .final_div_factor(100.0)
                                                               .three_phase(true));
       },
       rows(kOneCycleLR3), 4,
       with_base(
           S::dict({{"total_steps", 50},
                    {"_schedule_phases", S::list({phase(11.5, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                                                  phase(23.0, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                                                  phase(49, "initial_lr", "min_lr", "max_momentum", "max_momentum")})},
                    {"cycle_momentum", true},
                    {"use_beta1", true}}),
           {0.001, 0.002}, 7, 8, {0.006478260869565218, 0.012956521739130436})},
      {"SequentialLR",
       [](Rig& r) {
         r.optimizer<torch::optim::SGD>({0.1}, sgd(0.1));
         r.add<sch::LinearLR>(sch::LinearLROptions().start_factor(0.1).end_factor(1.0).total_iters(5));
         r.add<sch::CosineAnnealingLR>(20, sch::CosineAnnealingLROptions().eta_min(0.001));
         r.add<sch::StepLR>(5, 0.5);
         r.sequential({5, 25});
       },
       rows(kSequentialLR), 1,
       S::dict({{"_milestones", S::list({5, 25})},
                {"last_epoch", 7},
                {"_last_lr", S::list({0.09757729755661011})},
                {"_schedulers",
                 S::list({with_base(S::dict({{"start_factor", 0.1}, {"end_factor", 1.0}, {"total_iters", 5}}), {0.1}, 4,
                                    5, {0.082}),
                          with_base(S::dict({{"T_max", 20}, {"eta_min", 0.001}}), {0.1}, 2, 4, {0.09757729755661011}),
                          // Built while the warm-up had set lr 0.1 * 0.1; never stepped since.
                          with_base(S::dict({{"step_size", 5}, {"gamma", 0.5}}), {0.1}, -1, 1,
                                    {0.010000000000000002})})}})},
  };
}

void check_row(const Rig& rig, const Case& c, std::size_t i) {
  const std::vector<double> got = rig.row();
  REQUIRE(got.size() == c.cols);
  for (std::size_t k = 0; k < c.cols; ++k) {
    INFO(c.name << " step " << i << " column " << k);
    CHECK(got[k] == c.table[i * c.cols + k]);  // bit for bit: same operations, same libm
  }
}

}  // namespace

TEST_CASE("LR schedulers: Python's rates and momenta for 50 steps, and Python's state after 7 steps") {
  for (const Case& c : cases()) {
    Rig rig;
    c.build(rig);
    check_row(rig, c, 0);
    for (std::size_t i = 1; i <= 50; ++i) {
      rig.step();
      check_row(rig, c, i);
      if (i == 7) {
        INFO(c.name);
        CHECK(rig.state() == c.state7);
        // Through ppe's pickle (what a snapshot holds) the layout is unchanged.
        CHECK(ppe::serialization::pickle_loads(ppe::serialization::pickle_dumps(rig.state())) == c.state7);
      }
    }
  }
}

TEST_CASE("LR schedulers: a pickled state resumes the schedule mid-way in a new scheduler") {
  for (const Case& c : cases()) {
    INFO(c.name);
    std::vector<char> sched_bytes, opt_bytes;
    {
      Rig first;
      c.build(first);
      for (int i = 0; i < 7; ++i) first.step();
      sched_bytes = ppe::serialization::pickle_dumps(first.state());
      opt_bytes = ppe::serialization::pickle_dumps(first.save_opt());
    }
    Rig second;
    c.build(second);
    second.load_opt(ppe::serialization::pickle_loads(opt_bytes));
    second.load(ppe::serialization::pickle_loads(sched_bytes));
    check_row(second, c, 7);
    for (std::size_t i = 8; i <= 50; ++i) {
      second.step();
      check_row(second, c, i);
    }
  }
}

namespace {

/// What `f` prints on stdout (Python's verbose messages go there).
template <class F>
std::string stdout_of(F&& f) {
  std::fflush(stdout);
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  const int saved = ::dup(1);
  ::dup2(::fileno(tmp), 1);
  f();
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  std::rewind(tmp);
  std::string out;
  for (int ch; (ch = std::fgetc(tmp)) != EOF;) out += static_cast<char>(ch);
  std::fclose(tmp);
  return out;
}

double lr_of(const torch::optim::Optimizer& o, std::size_t g = 0) { return o.param_groups()[g].options().get_lr(); }

}  // namespace

TEST_CASE("step(epoch) uses Python's closed forms (SequentialLR's milestones rely on it)") {
  // Python: each scheduler (settings of the tables above) on a new SGD(lr=0.1), then s.step(e) for each e in turn.
  const auto check = [](auto make, std::vector<std::int64_t> epochs, std::vector<double> expected) {
    auto opt = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
    auto s = make(*opt);
    for (std::size_t i = 0; i < epochs.size(); ++i) {
      s.step(epochs[i]);
      CHECK(lr_of(*opt) == expected[i]);
      CHECK(s.last_epoch() == epochs[i]);
    }
    return s.state_dict();
  };
  using O = torch::optim::Optimizer;
  const S step_lr = check([](O& o) { return sch::StepLR(o, 3, 0.5); }, {7, 2, 13}, {0.025, 0.1, 0.00625});
  CHECK(step_lr.at("_step_count") == S(4));  // the constructor's step and three
  check(
      [](O& o) {
        return sch::MultiStepLR(o, {5, 15, 15, 30}, sch::MultiStepLROptions().gamma(0.5));
      },
      {16, 4, 30}, {0.0125, 0.1, 0.00625});
  check([](O& o) { return sch::ExponentialLR(o, 0.9); }, {7, 13}, {0.04782969000000001, 0.02541865828329001});
  check([](O& o) { return sch::CosineAnnealingLR(o, 10, sch::CosineAnnealingLROptions().eta_min(0.001)); }, {7, 13},
        {0.021404630011522586, 0.021404630011522575});
  check([](O& o) { return sch::LinearLR(o, sch::LinearLROptions().start_factor(0.25).end_factor(1.0).total_iters(8)); },
        {3, 13}, {0.053125000000000006, 0.1});
}

TEST_CASE("CosineAnnealingWarmRestarts: int and fractional epochs as Python's, T_cur's type in the state") {
  // Python: CosineAnnealingWarmRestarts(SGD(lr=0.1), 5, T_mult, 0.001), then step(e) for each e.
  auto opt = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  {
    sch::CosineAnnealingWarmRestarts s(*opt, 5, sch::CosineAnnealingWarmRestartsOptions().T_mult(2).eta_min(0.001));
    s.step(13);
    CHECK(lr_of(*opt) == 0.010453658778440109);
    s.step(2);
    CHECK(lr_of(*opt) == 0.0657963412215599);
    s.step(7.5);
    CHECK(lr_of(*opt) == 0.0855017856687341);
    // Python's state after step(7.5): T_cur a float, last_epoch floor(7.5), _step_count still 0.
    CHECK(s.state_dict() ==
          with_base(S::dict({{"T_0", 5}, {"T_i", 10}, {"T_mult", 2}, {"eta_min", 0.001}, {"T_cur", 2.5}}), {0.1}, 7, 0,
                    {0.0855017856687341}));
    s.step(40);
    CHECK(lr_of(*opt) == 0.0962320368593087);
    CHECK(s.T_cur() == 5.0);
    CHECK(s.T_i() == 40);
    CHECK(s.state_dict().at("T_cur").is_double());  // Python: 40 - 5 * (2**3 - 1) / 1 is a float
  }
  {
    auto opt1 = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
    sch::CosineAnnealingWarmRestarts s(*opt1, 5, sch::CosineAnnealingWarmRestartsOptions().eta_min(0.001));
    s.step(13);
    CHECK(lr_of(*opt1) == 0.03520365877844011);
    CHECK(s.state_dict().at("T_cur") == S(3));  // 13 % 5, an int
    s.step(7.5f);
    CHECK(lr_of(*opt1) == 0.0505);
    CHECK(s.T_cur() == 2.5);
    CHECK(s.last_epoch() == 7);
  }
}

TEST_CASE("verbose prints Python's messages") {
  // Python 1.13, captured: StepLR(SGD(lr=0.1), 1, 0.5, verbose=True); step(); step(4); then
  // CosineAnnealingWarmRestarts(SGD(lr=0.1), 5, verbose=True); step(); step(2.5).
  auto opt = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  auto opt2 = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  const std::string out = stdout_of([&] {
    sch::StepLR s(*opt, 1, 0.5, sch::StepLROptions().verbose(true));
    s.step();
    s.step(4);
    sch::CosineAnnealingWarmRestarts c(*opt2, 5, sch::CosineAnnealingWarmRestartsOptions().verbose(true));
    c.step();
    c.step(2.5);
  });
  CHECK(out ==
        "Adjusting learning rate of group 0 to 1.0000e-01.\n"
        "Adjusting learning rate of group 0 to 5.0000e-02.\n"
        "Epoch 00004: adjusting learning rate of group 0 to 6.2500e-03.\n"
        "Epoch 00000: adjusting learning rate of group 0 to 1.0000e-01.\n"
        "Epoch 00001: adjusting learning rate of group 0 to 9.0451e-02.\n"
        "Epoch 2.50: adjusting learning rate of group 0 to 5.0000e-02.\n");
}

TEST_CASE("initial_lr: the first scheduler of an optimizer records it, later ones start from it") {
  auto opt = make_optimizer<torch::optim::SGD>({0.1, 0.2}, torch::optim::SGDOptions(0.1));
  {
    sch::LinearLR warmup(*opt, sch::LinearLROptions().start_factor(0.5));
    CHECK(lr_of(*opt, 1) == 0.1);  // 0.2 * 0.5
    // Python: the second scheduler's base_lrs are the groups' initial_lr, not the current rates.
    sch::ExponentialLR decay(*opt, 0.5);
    CHECK(decay.base_lrs() == std::vector<double>{0.1, 0.2});
    // last_epoch other than -1 takes them too, and steps on from there (0.05 * 0.5 at its step 5).
    sch::ExponentialLR resumed(*opt, 0.5, sch::ExponentialLROptions().last_epoch(4));
    CHECK(resumed.last_epoch() == 5);
    CHECK(resumed.base_lrs() == std::vector<double>{0.1, 0.2});
    CHECK(lr_of(*opt) == 0.025);
    const auto extras = sch::param_group_extras(*opt);
    REQUIRE(extras.size() == 2);
    CHECK(extras[1].at("initial_lr") == 0.2);
  }
  // With no scheduler of it alive the record is gone (as a new optimizer at this address would have none).
  CHECK(sch::param_group_extras(*opt).empty());
  sch::StepLR fresh(*opt, 2);
  CHECK(fresh.base_lrs() == std::vector<double>{0.025, 0.05});
  for (int i = 1; i <= 3; ++i) {
    // New optimizers, likely at reused addresses: each starts from its own rate.
    auto o = make_optimizer<torch::optim::SGD>({0.1 * i}, torch::optim::SGDOptions(0.1 * i));
    sch::StepLR s(*o, 2);
    CHECK(s.base_lrs() == std::vector<double>{0.1 * i});
  }
}

TEST_CASE("OneCycleLR: momentum of RMSprop and AdamW, its group values, the end of the cycle") {
  {
    auto opt = make_optimizer<torch::optim::RMSprop>({0.1}, torch::optim::RMSpropOptions(0.1).momentum(0.5));
    sch::OneCycleLR s(*opt, 1.0, sch::OneCycleLROptions().total_steps(10));
    CHECK(static_cast<torch::optim::RMSpropOptions&>(opt->param_groups()[0].options()).momentum() == 0.95);
    const auto extras = sch::param_group_extras(*opt);
    CHECK(extras[0].at("initial_lr") == 1.0 / 25.);
    CHECK(extras[0].at("max_lr") == 1.0);
    CHECK(extras[0].at("min_lr") == 1.0 / 25. / 1e4);
    CHECK(extras[0].at("base_momentum") == 0.85);
    for (int i = 0; i < 10; ++i) s.step();
    // Past total_steps: Python's ValueError text; nothing changes.
    const double lr = lr_of(*opt);
    CHECK_THROWS_WITH_AS(s.step(), "ppe::OneCycleLR: Tried to step 12 times. The specified number of total steps is 10",
                         std::out_of_range);
    CHECK(s.last_epoch() == 10);
    CHECK(lr_of(*opt) == lr);
  }
  {
    auto opt = make_optimizer<torch::optim::AdamW>({0.1}, torch::optim::AdamWOptions(0.1).betas({0.9, 0.99}));
    sch::OneCycleLR s(*opt, 1.0, sch::OneCycleLROptions().total_steps(10).max_momentum(0.97));
    const auto betas = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[0].options()).betas();
    CHECK(std::get<0>(betas) == 0.97);
    CHECK(std::get<1>(betas) == 0.99);
    CHECK(s.use_beta1());
  }
  {
    // No momentum: an error unless cycle_momentum(false) (Python's ValueError).
    auto opt = make_optimizer<torch::optim::Adagrad>({0.1}, torch::optim::AdagradOptions(0.1));
    CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, 1.0, sch::OneCycleLROptions().total_steps(10)),
                         doctest::Contains("optimizer must support momentum with `cycle_momentum` option enabled"),
                         std::invalid_argument);
    sch::OneCycleLR s(*opt, 1.0, sch::OneCycleLROptions().total_steps(10).cycle_momentum(false));
    CHECK(lr_of(*opt) == 0.040000000000000036);         // Python's: 1.0 + (0.04 - 1.0) / 2.0 * (cos(0) + 1)
    CHECK_FALSE(s.state_dict().contains("use_beta1"));  // Python sets it only when cycling
  }
}

TEST_CASE("LR schedulers: construction errors as Python's, with clear messages") {
  auto opt = make_optimizer<torch::optim::SGD>({0.1, 0.1}, torch::optim::SGDOptions(0.1));
  auto other = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  using sch::OneCycleLROptions;
  CHECK_THROWS_WITH_AS(sch::StepLR(*opt, 0),
                       "ppe::StepLR: step_size must not be 0 (the rate changes every step_size steps)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::CosineAnnealingLR(*opt, 0), doctest::Contains("T_max must not be 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::LinearLR(*opt, sch::LinearLROptions().start_factor(1.5)),
                       "ppe::LinearLR: starting multiplicative factor expected to be between 0 and 1, got 1.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::LinearLR(*opt, sch::LinearLROptions().end_factor(-0.5)),
                       "ppe::LinearLR: ending multiplicative factor expected to be between 0 and 1, got -0.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::CosineAnnealingWarmRestarts(*opt, 0),
                       "ppe::CosineAnnealingWarmRestarts: expected positive integer T_0, but got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::CosineAnnealingWarmRestarts(*opt, 5, sch::CosineAnnealingWarmRestartsOptions().T_mult(0)),
                       "ppe::CosineAnnealingWarmRestarts: expected integer T_mult >= 1, but got 0",
                       std::invalid_argument);
  sch::CosineAnnealingWarmRestarts restarts(*opt, 5);
  CHECK_THROWS_WITH_AS(restarts.step(-1), "ppe::CosineAnnealingWarmRestarts: expected non-negative epoch, but got -1",
                       std::invalid_argument);
  CHECK(restarts.last_epoch() == 0);
  CHECK_THROWS_WITH_AS(sch::LambdaLR(*opt, std::vector<sch::LambdaLR::Lambda>{[](std::int64_t) { return 1.0; }}),
                       "ppe::LambdaLR: expected 2 lr_lambdas (one per param group), but got 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, 1.0),
                       "ppe::OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, 1.0, OneCycleLROptions().total_steps(0)),
                       "ppe::OneCycleLR: expected positive integer total_steps, but got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, 1.0, OneCycleLROptions().epochs(5)),
                       "ppe::OneCycleLR: expected positive integer steps_per_epoch, but got none",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, 1.0, OneCycleLROptions().total_steps(10).pct_start(1.5)),
                       "ppe::OneCycleLR: expected float between 0 and 1 pct_start, but got 1.5", std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, 1.0, OneCycleLROptions().total_steps(10).anneal_strategy("exp")),
                       "ppe::OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', instead got 'exp'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::OneCycleLR(*opt, {1.0, 2.0, 3.0}, OneCycleLROptions().total_steps(10)),
                       "ppe::OneCycleLR: expected 2 values for max_lr (one per param group), got 3",
                       std::invalid_argument);
  // Python's ZeroDivisionError: a first phase of no steps (0.1 * 10 - 1 == 0) divides 0 by 0 at step 0.
  CHECK_THROWS_AS(sch::OneCycleLR(*opt, 1.0, OneCycleLROptions().total_steps(10).pct_start(0.1)), std::domain_error);

  sch::StepLR a(*opt, 2);
  sch::StepLR b(*other, 2);
  CHECK_THROWS_WITH_AS(sch::SequentialLR(*opt, {a}, {3}),
                       "ppe::SequentialLR: Sequential Schedulers expects number of schedulers provided to be one more "
                       "than the number of milestone points, but got number of schedulers 1 and the number of "
                       "milestones to be equal to 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::SequentialLR(*opt, {a, b}, {3}),
                       "ppe::SequentialLR: Sequential Schedulers expects all schedulers to belong to the same "
                       "optimizer, but got schedulers at index 1 to be different than the optimizer passed in.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sch::SequentialLR(*opt, {}, {}), doctest::Contains("at least one scheduler"),
                       std::invalid_argument);

  // Resuming by last_epoch needs the initial rates, which only a live scheduler of the optimizer has.
  auto lone = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  CHECK_THROWS_WITH_AS(sch::StepLR(*lone, 2, sch::StepLROptions().last_epoch(3)),
                       doctest::Contains("ppe::StepLR: param 'initial_lr' is not specified in param_groups[0] when "
                                         "resuming an optimizer"),
                       std::invalid_argument);
}

TEST_CASE("LR schedulers: a zero divisor is Python's ZeroDivisionError, and the failed step changes nothing") {
  // LinearLR(start_factor=0): Python's step 1 divides (1 - 0) by 5 * 0 + 0 * (1 - 0).
  auto opt = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  sch::LinearLR s(*opt, sch::LinearLROptions().start_factor(0.0));
  CHECK(lr_of(*opt) == 0.0);
  CHECK_THROWS_WITH_AS(s.step(), doctest::Contains("ppe::LinearLR: float division by zero"), std::domain_error);
  CHECK(s.last_epoch() == 0);
  CHECK(s.state_dict().at("_step_count") == S(1));
}

TEST_CASE("LR schedulers: a bad saved state names the key and changes nothing") {
  auto opt = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  sch::StepLR s(*opt, 3, 0.5);
  s.step();
  const S before = s.state_dict();
  S missing = before;
  missing.pop("gamma");
  CHECK_THROWS_WITH_AS(s.load_state_dict(missing),
                       "ppe::StepLR: the saved scheduler state has no 'gamma' (keys present: ['step_size', 'base_lrs', "
                       "'last_epoch', 'verbose', '_step_count', '_get_lr_called_within_step', '_last_lr'])",
                       std::invalid_argument);
  S wrong = before;
  wrong.set("last_epoch", 2.5);
  CHECK_THROWS_WITH_AS(s.load_state_dict(wrong), "ppe::StepLR: the saved 'last_epoch' is a double, expected an int",
                       std::invalid_argument);
  S groups = before;
  groups.set("base_lrs", S::list({0.1, 0.2}));
  CHECK_THROWS_WITH_AS(s.load_state_dict(groups),
                       "ppe::StepLR: the saved 'base_lrs' has 2 values, expected 1 (one per param group)",
                       std::invalid_argument);
  S zero = before;
  zero.set("step_size", 0);
  CHECK_THROWS_AS(s.load_state_dict(zero), std::invalid_argument);
  CHECK(s.state_dict() == before);

  // A loaded state overrides the constructor's settings, as Python's __dict__.update does.
  S other = before;
  other.set("gamma", 0.25);
  s.load_state_dict(other);
  CHECK(s.gamma() == 0.25);

  auto seq_opt = make_optimizer<torch::optim::SGD>({0.1}, torch::optim::SGDOptions(0.1));
  sch::StepLR c1(*seq_opt, 2);
  sch::ExponentialLR c2(*seq_opt, 0.5);
  sch::SequentialLR seq(*seq_opt, {c1, c2}, {3});
  S short_list = seq.state_dict();
  short_list.set("_schedulers", S::list({c1.state_dict()}));
  CHECK_THROWS_WITH_AS(seq.load_state_dict(short_list),
                       "ppe::SequentialLR: the saved state has 1 schedulers, this one 2", std::invalid_argument);
}

namespace {

/// The rate each iteration's body saw, from `lr0`, under the LRScheduler extension with its default
/// trigger (a step after each epoch) for `epochs` epochs of `iters` iterations; `make(optimizer)`
/// makes the scheduler.
template <class Make>
std::vector<double> rates_under_extension(Make make, double lr0, int epochs, int iters) {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD opt(model->parameters(), lr0);
  auto sched = make(opt);
  auto manager = tr::ExtensionsManager(ppe_test::options(epochs, iters), model, opt, ext::LRScheduler(*sched));
  std::vector<double> seen;
  for (int i = 0; i < epochs * iters; ++i) manager.run_iteration([&] { seen.push_back(lr_of(opt)); });
  return seen;
}

}  // namespace

TEST_CASE("LRScheduler extension: StepLR(opt, 1, 0.5) halves after the first epoch, as in Python") {
  // Per-epoch steps (the extension's default trigger), 2 iterations per epoch, 3 epochs. Python's
  // StepLR(opt, 1, 0.5): 1.0 in epoch 0, 0.5 in epoch 1, 0.25 in epoch 2. LibTorch's StepLR keeps the
  // rate at its first step (docs/lr-scheduler.md): 1.0, 1.0, 0.5.
  const auto run = [](auto make) { return rates_under_extension(make, 1.0, 3, 2); };
  CHECK(run([](torch::optim::SGD& o) { return std::make_unique<sch::StepLR>(o, 1, 0.5); }) ==
        std::vector<double>{1.0, 1.0, 0.5, 0.5, 0.25, 0.25});
  CHECK(run([](torch::optim::SGD& o) { return std::make_unique<torch::optim::StepLR>(o, 1, 0.5); }) ==
        std::vector<double>{1.0, 1.0, 1.0, 1.0, 0.5, 0.5});
}

TEST_CASE("LRScheduler extension: the rate per epoch of Python's and LibTorch's StepLR (docs/lr-schedulers.md)") {
  // The demo's StepLR(step_size=3, gamma=0.4) from 0.002, stepped after each of 9 epochs. With
  // epochs counted from 1, Python's rate in epoch e is lr0·gamma^floor((e-1)/3); LibTorch's is
  // lr0·gamma^floor((e-2)/3) from epoch 2 on (lr0 in epoch 1): the same steps, one epoch later.
  const auto run = [](auto make) { return rates_under_extension(make, 0.002, 9, 1); };
  const auto python = run([](torch::optim::SGD& o) { return std::make_unique<sch::StepLR>(o, 3, 0.4); });
  const auto libtorch = run([](torch::optim::SGD& o) { return std::make_unique<torch::optim::StepLR>(o, 3, 0.4); });
  for (int e = 1; e <= 9; ++e) {
    CAPTURE(e);
    CHECK(python[e - 1] == doctest::Approx(0.002 * std::pow(0.4, (e - 1) / 3)).epsilon(1e-12));
    CHECK(libtorch[e - 1] == doctest::Approx(0.002 * std::pow(0.4, e < 2 ? 0 : (e - 2) / 3)).epsilon(1e-12));
  }
  CHECK(python[3] == doctest::Approx(0.0008));  // epoch 4: PyTorch's first decay
  CHECK(libtorch[3] == 0.002);                   // LibTorch's comes in epoch 5
  CHECK(libtorch[4] == doctest::Approx(0.0008));
}

namespace {

/// A warm-up then a cosine (SequentialLR) stepped per epoch, and a OneCycleLR with SGD momentum on
/// a second optimizer stepped per iteration, under a manager of 6 epochs of 2 iterations. Runs
/// `iterations` iterations, first loading the pickled manager state `resume` when given; returns
/// the rates and momentum each body saw, and the pickled manager state at the end in `saved`.
std::vector<double> run_schedules(int iterations, const std::vector<char>* resume, std::vector<char>* saved) {
  torch::nn::Linear model(2, 1), model2(2, 1);
  torch::optim::SGD opt(model->parameters(), 1.0);
  torch::optim::SGD opt2(model2->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  sch::LinearLR warmup(opt, sch::LinearLROptions().start_factor(0.25).total_iters(2));
  sch::CosineAnnealingLR cosine(opt, 4, sch::CosineAnnealingLROptions().eta_min(0.01));
  sch::SequentialLR seq(opt, {warmup, cosine}, {2});
  sch::OneCycleLR cycle(opt2, 1.0, sch::OneCycleLROptions().total_steps(12));
  auto manager = tr::ExtensionsManager(ppe_test::options(6, 2), tr::Models{{"a", model}, {"b", model2}},
                                       tr::Optimizers{{"a", opt}, {"b", opt2}}, ext::LRScheduler(seq),
                                       tr::entry(ext::LRScheduler(cycle), ppe::iterations(1), "cycle"));
  if (resume) manager.load_state_dict(ppe::serialization::pickle_loads(*resume));
  std::vector<double> seen;
  for (int i = 0; i < iterations; ++i)
    manager.run_iteration([&] {
      seen.push_back(lr_of(opt));
      seen.push_back(lr_of(opt2));
      seen.push_back(static_cast<torch::optim::SGDOptions&>(opt2.param_groups()[0].options()).momentum());
    });
  if (saved) {
    const S state = manager.state_dict();
    // The extension holds each scheduler's own state (Python's layout).
    CHECK(state.at("extensions").at("LRScheduler").at("extension").at("scheduler") == seq.state_dict());
    CHECK(state.at("extensions").at("cycle").at("extension").at("scheduler") == cycle.state_dict());
    *saved = ppe::serialization::pickle_dumps(state);
  }
  return seen;
}

}  // namespace

TEST_CASE("LRScheduler extension: a manager's snapshot resumes a SequentialLR and a OneCycleLR mid-schedule") {
  // Interrupted after 3 epochs (3 SequentialLR steps, 6 OneCycleLR steps), the resumed run must see
  // exactly the rates and momenta of the uninterrupted one.
  const std::vector<double> whole = run_schedules(12, nullptr, nullptr);
  CHECK(whole[0] == 0.25);              // the warm-up's start, 1.0 * 0.25
  CHECK(whole[2] == 0.95);              // OneCycleLR's max_momentum
  CHECK(whole[6 * 3] != whole[4 * 3]);  // the schedule moves between the epochs around the cut
  std::vector<char> bytes;
  run_schedules(6, nullptr, &bytes);
  const std::vector<double> rest = run_schedules(6, &bytes, nullptr);
  CHECK(rest == std::vector<double>(whole.begin() + 6 * 3, whole.end()));
}

}  // namespace ppe_test_optim_tests_test_lr_scheduler
