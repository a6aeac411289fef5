/* math_tables.h - constants and tables of samebits' binary32 math library.
 * GENERATED with mpmath at 60 digits by the script in docs/MATH-VERIFICATION.md;
 * every entry is the exact value rounded to nearest double, and (hi, lo)
 * pairs are double-double: hi = RN(v), lo = RN(v - hi). Do not edit by hand. */
#ifndef SB_MATH_TABLES_H
#define SB_MATH_TABLES_H

/* exp: x = k*ln2/64 + r. ln2/64 = L1 + L2 + L3 with 39-bit L1, L2 so that
 * k*L1 and k*L2 are exact for |k| < 2^14. */
#define SB_EXP_INVL 0x1.71547652b82fep+6 /* 64/ln2 */
#define SB_EXP_L1 0x1.62e42fefa0000p-7
#define SB_EXP_L2 0x1.cf79abc9e0000p-46
#define SB_EXP_L3 0x1.d9cc01f97b57ap-85
/* 2^(j/64), j = 0..63, as double-double. */
SB_MATH_TABLE static const double sb_exp_tab[64][2] = {
    {0x1.0000000000000p+0, 0x0.0p+0},
    {0x1.02c9a3e778061p+0, -0x1.19083535b085dp-56},
    {0x1.059b0d3158574p+0, 0x1.d73e2a475b465p-55},
    {0x1.0874518759bc8p+0, 0x1.186be4bb284ffp-57},
    {0x1.0b5586cf9890fp+0, 0x1.8a62e4adc610bp-54},
    {0x1.0e3ec32d3d1a2p+0, 0x1.03a1727c57b53p-59},
    {0x1.11301d0125b51p+0, -0x1.6c51039449b3ap-54},
    {0x1.1429aaea92de0p+0, -0x1.32fbf9af1369ep-54},
    {0x1.172b83c7d517bp+0, -0x1.19041b9d78a76p-55},
    {0x1.1a35beb6fcb75p+0, 0x1.e5b4c7b4968e4p-55},
    {0x1.1d4873168b9aap+0, 0x1.e016e00a2643cp-54},
    {0x1.2063b88628cd6p+0, 0x1.dc775814a8495p-55},
    {0x1.2387a6e756238p+0, 0x1.9b07eb6c70573p-54},
    {0x1.26b4565e27cddp+0, 0x1.2bd339940e9d9p-55},
    {0x1.29e9df51fdee1p+0, 0x1.612e8afad1255p-55},
    {0x1.2d285a6e4030bp+0, 0x1.0024754db41d5p-54},
    {0x1.306fe0a31b715p+0, 0x1.6f46ad23182e4p-55},
    {0x1.33c08b26416ffp+0, 0x1.32721843659a6p-54},
    {0x1.371a7373aa9cbp+0, -0x1.63aeabf42eae2p-54},
    {0x1.3a7db34e59ff7p+0, -0x1.5e436d661f5e3p-56},
    {0x1.3dea64c123422p+0, 0x1.ada0911f09ebcp-55},
    {0x1.4160a21f72e2ap+0, -0x1.ef3691c309278p-58},
    {0x1.44e086061892dp+0, 0x1.89b7a04ef80d0p-59},
    {0x1.486a2b5c13cd0p+0, 0x1.3c1a3b69062f0p-56},
    {0x1.4bfdad5362a27p+0, 0x1.d4397afec42e2p-56},
    {0x1.4f9b2769d2ca7p+0, -0x1.4b309d25957e3p-54},
    {0x1.5342b569d4f82p+0, -0x1.07abe1db13cadp-55},
    {0x1.56f4736b527dap+0, 0x1.9bb2c011d93adp-54},
    {0x1.5ab07dd485429p+0, 0x1.6324c054647adp-54},
    {0x1.5e76f15ad2148p+0, 0x1.ba6f93080e65ep-54},
    {0x1.6247eb03a5585p+0, -0x1.383c17e40b497p-54},
    {0x1.6623882552225p+0, -0x1.bb60987591c34p-54},
    {0x1.6a09e667f3bcdp+0, -0x1.bdd3413b26456p-54},
    {0x1.6dfb23c651a2fp+0, -0x1.bbe3a683c88abp-57},
    {0x1.71f75e8ec5f74p+0, -0x1.16e4786887a99p-55},
    {0x1.75feb564267c9p+0, -0x1.0245957316dd3p-54},
    {0x1.7a11473eb0187p+0, -0x1.41577ee04992fp-55},
    {0x1.7e2f336cf4e62p+0, 0x1.05d02ba15797ep-56},
    {0x1.82589994cce13p+0, -0x1.d4c1dd41532d8p-54},
    {0x1.868d99b4492edp+0, -0x1.fc6f89bd4f6bap-54},
    {0x1.8ace5422aa0dbp+0, 0x1.6e9f156864b27p-54},
    {0x1.8f1ae99157736p+0, 0x1.5cc13a2e3976cp-55},
    {0x1.93737b0cdc5e5p+0, -0x1.75fc781b57ebcp-57},
    {0x1.97d829fde4e50p+0, -0x1.d185b7c1b85d1p-54},
    {0x1.9c49182a3f090p+0, 0x1.c7c46b071f2bep-56},
    {0x1.a0c667b5de565p+0, -0x1.359495d1cd533p-54},
    {0x1.a5503b23e255dp+0, -0x1.d2f6edb8d41e1p-54},
    {0x1.a9e6b5579fdbfp+0, 0x1.0fac90ef7fd31p-54},
    {0x1.ae89f995ad3adp+0, 0x1.7a1cd345dcc81p-54},
    {0x1.b33a2b84f15fbp+0, -0x1.2805e3084d708p-57},
    {0x1.b7f76f2fb5e47p+0, -0x1.5584f7e54ac3bp-56},
    {0x1.bcc1e904bc1d2p+0, 0x1.23dd07a2d9e84p-55},
    {0x1.c199bdd85529cp+0, 0x1.11065895048ddp-55},
    {0x1.c67f12e57d14bp+0, 0x1.2884dff483cadp-54},
    {0x1.cb720dcef9069p+0, 0x1.503cbd1e949dbp-56},
    {0x1.d072d4a07897cp+0, -0x1.cbc3743797a9cp-54},
    {0x1.d5818dcfba487p+0, 0x1.2ed02d75b3707p-55},
    {0x1.da9e603db3285p+0, 0x1.c2300696db532p-54},
    {0x1.dfc97337b9b5fp+0, -0x1.1a5cd4f184b5cp-54},
    {0x1.e502ee78b3ff6p+0, 0x1.39e8980a9cc8fp-55},
    {0x1.ea4afa2a490dap+0, -0x1.e9c23179c2893p-54},
    {0x1.efa1bee615a27p+0, 0x1.dc7f486a4b6b0p-54},
    {0x1.f50765b6e4540p+0, 0x1.9d3e12dd8a18bp-54},
    {0x1.fa7c1819e90d8p+0, 0x1.74853f3a5931ep-55},
};
/* 1/n!, n = 0..13, as double-double (Taylor coefficients of e^r). */
SB_MATH_TABLE static const double sb_exp_coef[14][2] = {
    {0x1.0000000000000p+0, 0x0.0p+0},
    {0x1.0000000000000p+0, 0x0.0p+0},
    {0x1.0000000000000p-1, 0x0.0p+0},
    {0x1.5555555555555p-3, 0x1.5555555555555p-57},
    {0x1.5555555555555p-5, 0x1.5555555555555p-59},
    {0x1.1111111111111p-7, 0x1.1111111111111p-63},
    {0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65},
    {0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-73},
    {0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76},
    {0x1.71de3a556c734p-19, -0x1.c154f8ddc6c00p-73},
    {0x1.27e4fb7789f5cp-22, 0x1.cbbc05b4fa99ap-76},
    {0x1.ae64567f544e4p-26, -0x1.c062e06d1f209p-80},
    {0x1.1eed8eff8d898p-29, -0x1.2aec959e14c06p-83},
    {0x1.6124613a86d09p-33, 0x1.f28e0cc748ebep-87},
};
/* log: for mantissa bin i (top 7 bits of m in [1,2); bins >= 64 use m/2)
 * c = RN_20bits(1/midpoint) (so m*c is exact for m of <= 33 bits) and
 * -log(c) as double-double. Bins 0 and 127 contain 1 and use c = 1. */
SB_MATH_TABLE static const double sb_log_tab[128][3] = {
    {0x1.0000000000000p+0, 0x0.0p+0, 0x0.0p+0},
    {0x1.fa11c00000000p-1, 0x1.7dc725f817e07p-7, -0x1.09e69d9e68958p-62},
    {0x1.f631000000000p-1, 0x1.3ceba4346e1f5p-6, -0x1.fdb0a6e85a96dp-63},
    {0x1.f25f600000000p-1, 0x1.b9fc8e7af9b2ap-6, -0x1.0769577978678p-64},
    {0x1.ee9c800000000p-1, 0x1.1b0d90923d990p-5, -0x1.e9ae9df101997p-60},
    {0x1.eae8000000000p-1, 0x1.58a63afc8f4d5p-5, -0x1.cdab1808380c7p-59},
    {0x1.e741a00000000p-1, 0x1.95c8deec9017cp-5, 0x1.f74d9e8bf5178p-59},
    {0x1.e3a9200000000p-1, 0x1.d2762aadb1f03p-5, 0x1.1a9843dc48820p-61},
    {0x1.e01e000000000p-1, 0x1.075993598e4f1p-4, 0x1.80dcfdde71063p-59},
    {0x1.dca0200000000p-1, 0x1.253f4ff0a14cbp-4, 0x1.e3eb6b06b05acp-58},
    {0x1.d92f200000000p-1, 0x1.42eddeea647a5p-4, -0x1.111347cfdbf75p-58},
    {0x1.d5cac00000000p-1, 0x1.6065d09375a56p-4, -0x1.3814b1955e043p-58},
    {0x1.d272c00000000p-1, 0x1.7da7c0d7b229fp-4, -0x1.ee00aed9aaf1ep-58},
    {0x1.cf26e00000000p-1, 0x1.9ab45762038c1p-4, 0x1.6fde3d5fa4c62p-58},
    {0x1.cbe6e00000000p-1, 0x1.b78c47bb0f46ep-4, -0x1.df33c1098cc90p-58},
    {0x1.c8b2600000000p-1, 0x1.d4317066cb872p-4, -0x1.0d8df0db7f6b9p-59},
    {0x1.c589400000000p-1, 0x1.f0a3820117dd8p-4, 0x1.8809fd269f597p-58},
    {0x1.c26b600000000p-1, 0x1.067118aca65e6p-3, 0x1.a7784b4549c33p-57},
    {0x1.bf58400000000p-1, 0x1.14785346742c5p-3, 0x1.a287ea38fd595p-57},
    {0x1.bc4fe00000000p-1, 0x1.2266c510a6288p-3, -0x1.0b2afe9b6cbd6p-57},
    {0x1.b951e00000000p-1, 0x1.303d7e0e4806fp-3, 0x1.f4a83228ab024p-58},
    {0x1.b65e200000000p-1, 0x1.3dfc6d8ecd770p-3, 0x1.5f0d1aa9eb433p-60},
    {0x1.b374800000000p-1, 0x1.4ba38539a57c9p-3, 0x1.68a5f921a8633p-57},
    {0x1.b094c00000000p-1, 0x1.5933509982f0fp-3, -0x1.6821434623d2dp-58},
    {0x1.adbe800000000p-1, 0x1.66acfa272b2f5p-3, -0x1.0871ff8a9824dp-58},
    {0x1.aaf1e00000000p-1, 0x1.740f50d4046e7p-3, 0x1.2c80c5e577466p-60},
    {0x1.a82e600000000p-1, 0x1.815c229435a43p-3, 0x1.6883974419ebcp-59},
    {0x1.a574200000000p-1, 0x1.8e92426888385p-3, -0x1.633795560ae24p-59},
    {0x1.a2c2a00000000p-1, 0x1.9bb38c67e023ep-3, -0x1.a844bd993cb5ep-57},
    {0x1.a01a000000000p-1, 0x1.a8bed7c882f59p-3, -0x1.e8c223c36d496p-58},
    {0x1.9d7a000000000p-1, 0x1.b5b4d1e8fc9e4p-3, 0x1.b841fdce6e99bp-57},
    {0x1.9ae2400000000p-1, 0x1.c296ce58c2d92p-3, -0x1.71e45b275fcbfp-57},
    {0x1.9853000000000p-1, 0x1.cf6308e09dc6cp-3, 0x1.215e728fee9b9p-57},
    {0x1.95cbc00000000p-1, 0x1.dc1b7d0ac03a6p-3, 0x1.80f9dfffa3e92p-57},
    {0x1.934c600000000p-1, 0x1.e8c04daaa60c8p-3, 0x1.49ab2cf492927p-58},
    {0x1.90d5000000000p-1, 0x1.f5505964b91c7p-3, 0x1.a23d8b794be69p-61},
    {0x1.8e65200000000p-1, 0x1.00e6d81ad5329p-2, -0x1.968a5367382b8p-58},
    {0x1.8bfce00000000p-1, 0x1.071b9abcd5c6ap-2, 0x1.e91550429e5d6p-57},
    {0x1.899c000000000p-1, 0x1.0d46dd79ac3cbp-2, 0x1.06872c81fe847p-57},
    {0x1.8742800000000p-1, 0x1.136865293a9a2p-2, 0x1.7b5f3ae440c63p-56},
    {0x1.84f0000000000p-1, 0x1.1980f2dd42b6fp-2, 0x1.9de7c5bcf7bf3p-56},
    {0x1.82a4a00000000p-1, 0x1.1f8ffa248a2f3p-2, -0x1.49fdf99b6f5b1p-56},
    {0x1.8060200000000p-1, 0x1.2595ebcdf79c1p-2, 0x1.df82a2faa28aep-59},
    {0x1.7e22600000000p-1, 0x1.2b92e66b8a3d4p-2, -0x1.09edb6c587d89p-56},
    {0x1.7beb400000000p-1, 0x1.31870a1544431p-2, 0x1.eac43989be05ap-56},
    {0x1.79baa00000000p-1, 0x1.3772786bfdaf5p-2, 0x1.25cd53567ab8cp-58},
    {0x1.7790800000000p-1, 0x1.3d54fd5c1f722p-2, -0x1.e326386a1c849p-56},
    {0x1.756ca00000000p-1, 0x1.432f13e04f0b7p-2, -0x1.51a743975b375p-57},
    {0x1.734f000000000p-1, 0x1.49008a04012d9p-2, -0x1.9e62c96a3acadp-57},
    {0x1.7137800000000p-1, 0x1.4ec986260053cp-2, -0x1.4284c441a92c5p-56},
    {0x1.6f26000000000p-1, 0x1.548a303add283p-2, -0x1.819c4d385db31p-57},
    {0x1.6d1a600000000p-1, 0x1.5a42b1cf4d03dp-2, -0x1.0ebb1dcee79cdp-56},
    {0x1.6b14a00000000p-1, 0x1.5ff2dbca7a271p-2, -0x1.7f575394d49e3p-58},
    {0x1.6914800000000p-1, 0x1.659b34303eb85p-2, -0x1.f97322c13255ap-56},
    {0x1.671a000000000p-1, 0x1.6b3b8e2359e5ep-2, -0x1.db786cc7303b6p-56},
    {0x1.6525000000000p-1, 0x1.70d41827895fep-2, -0x1.533b6bc659f84p-57},
    {0x1.6335600000000p-1, 0x1.766502639e472p-2, -0x1.eaadd776bf8cbp-58},
    {0x1.614b400000000p-1, 0x1.7bedc5237b5a8p-2, 0x1.e03f8cfe08c84p-58},
    {0x1.5f66400000000p-1, 0x1.816f4b5a0d54ap-2, 0x1.adc15a4bf73a6p-57},
    {0x1.5d86800000000p-1, 0x1.86e90ea330c92p-2, 0x1.3f63a1a9d4ea2p-59},
    {0x1.5babc00000000p-1, 0x1.8c5ba1058bef3p-2, 0x1.028fa28e7ce09p-59},
    {0x1.59d6200000000p-1, 0x1.91c67bf45a84dp-2, -0x1.60e0c9ddf57d7p-56},
    {0x1.5805600000000p-1, 0x1.972a345135159p-2, -0x1.da3f62d5f39d1p-56},
    {0x1.5639800000000p-1, 0x1.9c86a32dc09b5p-2, -0x1.918a5cbf16b32p-56},
    {0x1.5472600000000p+0, -0x1.23ec5e51eba1cp-2, 0x1.91204fff34c60p-58},
    {0x1.52b0000000000p+0, -0x1.1e9e3678891f4p-2, -0x1.51d6e1f04c8fbp-56},
    {0x1.50f2200000000p+0, -0x1.1956a8f9bb4b3p-2, -0x1.f40cfb7098c26p-57},
    {0x1.4f39000000000p+0, -0x1.14169cf36707bp-2, -0x1.01ddb4fbc755cp-61},
    {0x1.4d84400000000p+0, -0x1.0edd128b77f48p-2, -0x1.36afdcb1517aep-56},
    {0x1.4bd3e00000000p+0, -0x1.09aa2c6e6b88dp-2, -0x1.0254413425afdp-59},
    {0x1.4a28000000000p+0, -0x1.047e70cde81b8p-2, 0x1.07640deb4c766p-56},
    {0x1.4880600000000p+0, -0x1.feb279be9ea93p-3, 0x1.c7ae8aa3a2b72p-58},
    {0x1.46dce00000000p+0, -0x1.f4749cb4df085p-3, 0x1.93eef6ac2639dp-57},
    {0x1.453da00000000p+0, -0x1.ea4455704aa70p-3, -0x1.2cc8e149bf2b8p-57},
    {0x1.43a2800000000p+0, -0x1.e0211e6234071p-3, -0x1.0220342ba2541p-57},
    {0x1.420b600000000p+0, -0x1.d60a6e79017dap-3, -0x1.426b360031a09p-57},
    {0x1.4078200000000p+0, -0x1.cbffb91db2116p-3, -0x1.436d1c6e0085ap-59},
    {0x1.3ee9000000000p+0, -0x1.c202d6b17e324p-3, -0x1.f35638caa72cdp-57},
    {0x1.3d5da00000000p+0, -0x1.b8119f8b81c16p-3, 0x1.96dee7c1aaf07p-58},
    {0x1.3bd6000000000p+0, -0x1.ae2c4ef670d94p-3, -0x1.a7e55478b2b25p-57},
    {0x1.3a52400000000p+0, -0x1.a453f12e6a8f4p-3, -0x1.df00ce7029a50p-58},
    {0x1.38d2200000000p+0, -0x1.9a87225eb8cfep-3, -0x1.e266866e30675p-58},
    {0x1.3755c00000000p+0, -0x1.90c6ee9fcbb70p-3, -0x1.054d61e960466p-57},
    {0x1.35dce00000000p+0, -0x1.8711ebf50e37cp-3, -0x1.ac6b68262ca9ep-58},
    {0x1.3467a00000000p+0, -0x1.7d69264af562ap-3, 0x1.6ae24b2283d0dp-57},
    {0x1.32f5c00000000p+0, -0x1.73cb2d74fab04p-3, 0x1.570969391af86p-57},
    {0x1.3187800000000p+0, -0x1.6a39e3abbc05fp-3, -0x1.97f1c91e95af1p-57},
    {0x1.301c800000000p+0, -0x1.60b2fe0b09332p-3, 0x1.5b3553e069b7bp-58},
    {0x1.2eb4e00000000p+0, -0x1.5737881017a89p-3, -0x1.36abb5405cf5cp-59},
    {0x1.2d50a00000000p+0, -0x1.4dc7b817bc1c7p-3, -0x1.6d82b87518f61p-57},
    {0x1.2befa00000000p+0, -0x1.4462ea5c9aaacp-3, 0x1.b0b99758bbde3p-57},
    {0x1.2a91c00000000p+0, -0x1.3b0877757e328p-3, -0x1.66aa25b43aa50p-60},
    {0x1.2937200000000p+0, -0x1.31b96d53a496dp-3, 0x1.e288f53bb43b5p-57},
    {0x1.27dfa00000000p+0, -0x1.287523411a94cp-3, -0x1.9c57fffaf628ep-57},
    {0x1.268b400000000p+0, -0x1.1f3bcb5f25090p-3, -0x1.668e7b7f787a2p-59},
    {0x1.2539e00000000p+0, -0x1.160cb8a4b1b38p-3, -0x1.d393d94eb6a1ep-57},
    {0x1.23eb800000000p+0, -0x1.0ce81adccba49p-3, 0x1.68ab4302a9d0bp-57},
    {0x1.22a0200000000p+0, -0x1.03ce22251c6ebp-3, -0x1.f4cd676d03cfep-60},
    {0x1.2157a00000000p+0, -0x1.f57c38d8feceap-4, -0x1.b9d1684501d3fp-60},
    {0x1.2012000000000p+0, -0x1.e3706ee3047fbp-4, -0x1.09cb978023844p-58},
    {0x1.1ecf400000000p+0, -0x1.d179428218db2p-4, -0x1.9d48f9f667548p-59},
    {0x1.1d8f600000000p+0, -0x1.bf971069fa568p-4, -0x1.1c600bdab1996p-58},
    {0x1.1c52200000000p+0, -0x1.adc69be5a85e8p-4, 0x1.ae0d63da0005fp-59},
    {0x1.1b17c00000000p+0, -0x1.9c0bd4d4d1406p-4, -0x1.f8ef2518c8003p-59},
    {0x1.19e0200000000p+0, -0x1.8a6548a9186d8p-4, -0x1.0e5a38546e340p-58},
    {0x1.18ab000000000p+0, -0x1.78cfaa63d66b3p-4, -0x1.a997db437f77bp-58},
    {0x1.1778a00000000p+0, -0x1.674ef19365971p-4, -0x1.94b9fb856049ep-60},
    {0x1.1648e00000000p+0, -0x1.55e1a150dd0e3p-4, -0x1.7ea94e4c6b1f7p-59},
    {0x1.151ba00000000p+0, -0x1.4486353dbd191p-4, 0x1.c7299a85d6d0dp-59},
    {0x1.13f0e00000000p+0, -0x1.333cfc8181dc7p-4, 0x1.66c341b505597p-60},
    {0x1.12c8c00000000p+0, -0x1.220823c783cfcp-4, 0x1.ca5e783f1449ep-58},
    {0x1.11a3000000000p+0, -0x1.10e4433cae711p-4, 0x1.a4a5a8d197786p-58},
    {0x1.107fc00000000p+0, -0x1.ffa70d1ab83fdp-5, 0x1.cd03f64230899p-59},
    {0x1.0f5ee00000000p+0, -0x1.dda8b7c67ee35p-5, -0x1.4e6cad449a15cp-59},
    {0x1.0e40600000000p+0, -0x1.bbce1dc68da7fp-5, -0x1.e31b3f051399fp-60},
    {0x1.0d24400000000p+0, -0x1.9a17d7573c438p-5, 0x1.73dd1d7879a99p-59},
    {0x1.0c0a800000000p+0, -0x1.78867da35432ap-5, -0x1.e9e7becb27460p-59},
    {0x1.0af3000000000p+0, -0x1.5716d4c0386afp-5, 0x1.a261e4bd77866p-61},
    {0x1.09ddc00000000p+0, -0x1.35c96baa11387p-5, 0x1.36a1757854452p-63},
    {0x1.08cac00000000p+0, -0x1.149ed24004529p-5, 0x1.4f28e7d894a06p-61},
    {0x1.07ba000000000p+0, -0x1.e72f328127c51p-6, -0x1.a379992cdc190p-60},
    {0x1.06ab600000000p+0, -0x1.a560d88c57abdp-6, -0x1.feabe087bbde7p-62},
    {0x1.059ee00000000p+0, -0x1.63d3a38684b44p-6, 0x1.64e1d0dd6a4d1p-63},
    {0x1.0494a00000000p+0, -0x1.22907dfea19d6p-6, 0x1.cc21f4e355fb5p-61},
    {0x1.038c600000000p+0, -0x1.c311904c55f22p-7, -0x1.440ffe15d963bp-61},
    {0x1.0286400000000p+0, -0x1.418acf964625fp-7, -0x1.9bbc5ea9f3afbp-61},
    {0x1.0182400000000p+0, -0x1.811dc14581034p-8, -0x1.a7aa9f5298192p-65},
    {0x1.0000000000000p+0, 0x0.0p+0, 0x0.0p+0},
};
#define SB_LN2_HI 0x1.62e42fefa39efp-1
#define SB_LN2_LO 0x1.abc9e3b39803fp-56
/* (-1)^(n+1)/n, n = 0..18 (n = 0 unused), as double-double (log1p Taylor). */
SB_MATH_TABLE static const double sb_log1p_coef[19][2] = {
    {0x0p+0, 0x0p+0},
    {0x1.0000000000000p+0, 0x0.0p+0},
    {-0x1.0000000000000p-1, 0x0.0p+0},
    {0x1.5555555555555p-2, 0x1.5555555555555p-56},
    {-0x1.0000000000000p-2, 0x0.0p+0},
    {0x1.999999999999ap-3, -0x1.999999999999ap-57},
    {-0x1.5555555555555p-3, -0x1.5555555555555p-57},
    {0x1.2492492492492p-3, 0x1.2492492492492p-57},
    {-0x1.0000000000000p-3, 0x0.0p+0},
    {0x1.c71c71c71c71cp-4, 0x1.c71c71c71c71cp-58},
    {-0x1.999999999999ap-4, 0x1.999999999999ap-58},
    {0x1.745d1745d1746p-4, -0x1.745d1745d1746p-59},
    {-0x1.5555555555555p-4, -0x1.5555555555555p-58},
    {0x1.3b13b13b13b14p-4, -0x1.3b13b13b13b14p-58},
    {-0x1.2492492492492p-4, -0x1.2492492492492p-58},
    {0x1.1111111111111p-4, 0x1.1111111111111p-60},
    {-0x1.0000000000000p-4, 0x0.0p+0},
    {0x1.e1e1e1e1e1e1ep-5, 0x1.e1e1e1e1e1e1ep-61},
    {-0x1.c71c71c71c71cp-5, -0x1.c71c71c71c71cp-59},
};
#define SB_TWO_OVER_SQRTPI_HI 0x1.20dd750429b6dp+0
#define SB_TWO_OVER_SQRTPI_LO 0x1.1ae3a914fed80p-56
/* erf(x)/x ~ sum_{i<9} sb_erf_p0[i] * (x^2)^i on |x| < 1/2; Chebyshev fit,
 * max abs error 2^-57.7 (relative >= that since erf(x)/x > 1). */
SB_MATH_TABLE static const double sb_erf_p0[9] = {
    0x1.20dd750429b6dp+0, -0x1.812746b0379b5p-2, 0x1.ce2f21a03d814p-4, -0x1.b82ce30f2b28fp-6, 0x1.565bcbf8e0365p-8, -0x1.c02d4f6e4921ap-11, 0x1.f98db34e8872ep-14, -0x1.f224dfc5409afp-17, 0x1.8b4b60851826bp-20,
};
/* erf on [0, 4) in 16 pieces of width 1/4, piece i = (int)(4a), twelve
 * coefficients each. Row 0: erf(a) ~ sum_{k<12} sb_erf_p[0][k] a^k on
 * [0, 1/4) with sb_erf_p[0][0] = 0 (a times a Chebyshev fit of erf(a)/a,
 * so relative accuracy holds down to a -> 0); rows i >= 1:
 * erf(mid_i + t) ~ sum_{k<12} sb_erf_p[i][k] t^k for |t| <= 1/8, where
 * mid_i = i/4 + 1/8; Chebyshev fits. The scalar erff uses rows 2..15
 * (a >= 1/2, below it sb_erf_p0), the batch kernels all sixteen.
 * Max relative approximation error: row 0 2^-55.6, rows 1..15 2^-56.9. */
SB_MATH_TABLE static const double sb_erf_p[16][12] = {
    {0x0p+0, 0x1.20dd750429b6dp+0, -0x1.363ae00053b75p-46, -0x1.812746b02b8b0p-2, -0x1.7648b1835a073p-33, 0x1.ce2f2312a9b7ep-4, -0x1.a976f5b98879ep-24, -0x1.b82829af634e0p-6, -0x1.108961f0defe5p-17, 0x1.58c491b569fdep-8, -0x1.9b53758757cdfp-14, -0x1.7ea36c44503cdp-11},
    {0x1.9dd0d2b721f39p-2, 0x1.f5f0cdaf15313p-1, -0x1.78749a434fda0p-2, -0x1.e106c51d1efc4p-3, 0x1.5529abccc0e07p-3, 0x1.7488b8a80e647p-5, -0x1.9a7944be66245p-5, -0x1.65c10c783c90dp-8, 0x1.7098aae6a21aap-7, 0x1.043177cc35844p-13, -0x1.0584ed76f37aap-9, 0x1.e2d97b635be81p-14},
    {0x1.3f196dcd0f135p-1, 0x1.86e9694134b9ep-1, -0x1.e8a3c39181e6dp-2, -0x1.c8105021684b6p-5, 0x1.6963c8a394a22p-3, -0x1.c1242dff5208fp-6, -0x1.52b2666914c7bp-5, 0x1.c7cd9ab14a5eep-7, 0x1.b62eba164eaf3p-8, -0x1.dc3889d810d90p-9, -0x1.80141b1a9e8f8p-11, 0x1.61097834adbfdp-11},
    {0x1.91724951b8fc6p-1, 0x1.0cab61f084b93p-1, -0x1.d62beb64e84b2p-2, 0x1.7c9d756a11577p-4, 0x1.cc60567dcb2f2p-4, -0x1.1350f4b216313p-4, -0x1.53bb4d1a8d5b4p-7, 0x1.30ac215e3e32cp-6, -0x1.e3ea35cb11457p-10, -0x1.aae160aa13dabp-9, 0x1.d22b9babc231bp-11, 0x1.9792cf62e415bp-12},
    {0x1.c6dad2829ec62p-1, 0x1.45e99bcbb7915p-2, -0x1.6ea6cf452e88bp-2, 0x1.4cb3cf0aa0bd5p-3, 0x1.ca5083176cd42p-6, -0x1.f65d15f1f9ca6p-5, 0x1.fd1c6a0c1b1e0p-7, 0x1.3acc78f6568cfp-7, -0x1.8b41d0bfe168ep-8, -0x1.79bb2c79f597dp-12, 0x1.2c9625343c636p-10, -0x1.6e432174e4fb9p-13},
    {0x1.e5768c3b4a3fcp-1, 0x1.5ce595c455b0ap-3, -0x1.dfbbadedf5d0dp-3, 0x1.4374d82e04c98p-3, -0x1.f3b8d52d65ce9p-6, -0x1.f572c4c90f4a0p-6, 0x1.6b16f560081acp-6, -0x1.73ffa4f2322fbp-10, -0x1.1740ab24a012cp-8, 0x1.9da1871f90f2ep-10, 0x1.54b3ebfeac25bp-12, -0x1.6186925b1a49ep-12},
    {0x1.f4f693b67bd77p-1, 0x1.499d478bca735p-4, -0x1.0bcfca2194774p-3, 0x1.d6631e1a28e95p-4, -0x1.974c0368b26acp-5, -0x1.17d430bd1edc1p-9, 0x1.d857f405e8b95p-7, -0x1.954ab113ee578p-8, -0x1.2e4d9de469b58p-11, 0x1.71cdb33e5aa43p-10, -0x1.70f66e215ee0ap-12, -0x1.07f2942f29257p-13},
    {0x1.fbe61eef4cf6ap-1, 0x1.12ceb37ff9bc3p-5, -0x1.01a1c847fa1b2p-4, 0x1.143d1c6f4f062p-4, -0x1.5a316520d72b3p-5, 0x1.779b1e574b71ep-7, 0x1.0d099d8433ba5p-8, -0x1.42fcbb40519b4p-8, 0x1.76fd58c2a6dbcp-10, 0x1.7bdf0e2c4fecap-12, -0x1.9755ea0d15658p-12, 0x1.312b5209d33c1p-14},
    {0x1.fea4218d6594ap-1, 0x1.94624e78e0fafp-7, -0x1.ada873606f135p-6, 0x1.0ea475da3be57p-5, -0x1.afe553fa2b847p-6, 0x1.9973b48a1754cp-7, -0x1.dd78efc7aa65cp-10, -0x1.ea03bc1db74a1p-10, 0x1.6aa39274cbc62p-10, -0x1.2fd94f6272590p-12, -0x1.02ee7acbf3cc4p-13, 0x1.8c2cbbbde9747p-14},
    {0x1.ff9960f3eb327p-1, 0x1.06918b6355624p-8, -0x1.37ccd585f57d2p-7, 0x1.c1ec102e3652bp-7, -0x1.ae59615f4763cp-7, 0x1.11dae4734632bp-7, -0x1.982b287bcb7bfp-9, 0x1.0283e390eb655p-13, 0x1.377e903c78e31p-11, -0x1.61ed2093c695fp-12, 0x1.c2bf325fecd8fp-15, 0x1.0a61099461ab4p-15},
    {0x1.ffe514bbdc197p-1, 0x1.2ce898809244ep-10, -0x1.8af14828c01a2p-9, 0x1.407fbd18f129dp-8, -0x1.62d4c6d46e3ffp-8, 0x1.146c4b3e0c3f8p-8, -0x1.267f3c2685aabp-9, 0x1.64f892a42fd68p-11, 0x1.22aad1ff5ec7ep-15, -0x1.4008911631e6ep-13, 0x1.34e03bad6df21p-14, -0x1.53f781a2f8ce9p-17},
    {0x1.fff9ba420e834p-1, 0x1.30538fbb77ecdp-12, -0x1.b5781e9d7c3eap-11, 0x1.89e17c074d427p-10, -0x1.ed4ac7db216e4p-10, 0x1.c11f27063bc8fp-10, -0x1.2add1cac8eeb1p-10, 0x1.151f789ab71cbp-11, -0x1.1c64e2cd46235p-13, -0x1.0ec8f02c90ac9p-16, 0x1.18df44e8fb689p-15, -0x1.ef219c71728b5p-17},
    {0x1.fffeb3ebb267bp-1, 0x1.0f9e1b4dd36dfp-14, -0x1.a8670aa9998e6p-13, 0x1.a3737e2a2f1c6p-12, -0x1.24544f03686b3p-11, 0x1.2e7e763d49ed7p-11, -0x1.da496d13c99f2p-12, 0x1.176cf6341dee3p-12, -0x1.d2aed4fcbf6a3p-14, 0x1.aaff2ff947d6bp-16, 0x1.0c8410e96fd02p-18, -0x1.ac797b25b8411p-18},
    {0x1.ffffc316d9ed0p-1, 0x1.abe09e9144b60p-17, -0x1.690585ca90b67p-15, 0x1.84522fe881164p-14, -0x1.298f8d46e1d55p-13, 0x1.57757788c4d89p-13, -0x1.330aaa7ca787bp-13, 0x1.ac999704d61bcp-14, -0x1.cc175cf8e2c78p-15, 0x1.64c6d1c108577p-16, -0x1.3193ec71a7962p-18, -0x1.6b294e4729e88p-21},
    {0x1.fffff618c3da6p-1, 0x1.296a70f414056p-19, -0x1.0d88765d31c40p-17, 0x1.394b1fa670b7fp-16, -0x1.05760ad2036e9p-15, 0x1.4c1fe48ae502ap-15, -0x1.4b981fe883cd7p-15, 0x1.085c0eee934ecp-15, -0x1.510a840f07070p-16, 0x1.51667115f1e2fp-17, -0x1.f29b2a0cae15cp-19, 0x1.ac810845afcbcp-21},
    {0x1.fffffe92ced93p-1, 0x1.6ce1aa3fd7bdep-22, -0x1.617a9cedde0a9p-20, 0x1.b95fa39b39e30p-19, -0x1.8e1fc4118b714p-18, 0x1.137172181077fp-17, -0x1.2eb292a7b5c82p-17, 0x1.0d8c35bad4b31p-17, -0x1.888385a064df7p-18, 0x1.d25c64d8df19cp-19, -0x1.bd6ae1950c0bep-20, 0x1.3fe6871d5d01cp-21},
};
/* 1/ln2 as double-double (log2(x) = log(x) / ln2). */
#define SB_INVLN2_HI 0x1.71547652b82fep+0
#define SB_INVLN2_LO 0x1.777d0ffda0d24p-56
/* 2/pi = sum_k sb_two_over_pi[k] * 2^(-32(k+1)): its first 320 bits, enough
 * for the exact reduction of every float (src/math/math_internal.h). */
SB_MATH_TABLE static const uint32_t sb_two_over_pi[10] = {
    0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
    0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u,
};
#define SB_PIO2_HI 0x1.921fb54442d18p+0
#define SB_PIO2_LO 0x1.1a62633145c07p-54
/* Cody-Waite reduction of sinf/cosf for |x| < 2^28 (k = RN(x*2/pi) < 2^28):
 * pi/2 = P1 + P2 + P3 with 25-bit P1 and P2 (so k*P1, k*P2 are exact) and
 * P3 = RN(pi/2 - P1 - P2), |pi/2 - P1 - P2 - P3| < 2^-109. */
#define SB_TRIG_INVPIO2 0x1.45f306dc9c883p-1 /* RN(2/pi) */
#define SB_TRIG_CW_P1 0x1.921fb50000000p+0
#define SB_TRIG_CW_P2 0x1.110b460000000p-26
#define SB_TRIG_CW_P3 0x1.1a62633145c07p-54
/* (-1)^i/(2i+1)!, i = 0..14 (sin r = r + r * sum_{i>=1} c_i r^2i), as
 * double-double. */
SB_MATH_TABLE static const double sb_sin_coef[15][2] = {
    {0x1.0000000000000p+0, 0x0.0p+0},
    {-0x1.5555555555555p-3, -0x1.5555555555555p-57},
    {0x1.1111111111111p-7, 0x1.1111111111111p-63},
    {-0x1.a01a01a01a01ap-13, -0x1.a01a01a01a01ap-73},
    {0x1.71de3a556c734p-19, -0x1.c154f8ddc6c00p-73},
    {-0x1.ae64567f544e4p-26, 0x1.c062e06d1f209p-80},
    {0x1.6124613a86d09p-33, 0x1.f28e0cc748ebep-87},
    {-0x1.ae7f3e733b81fp-41, -0x1.1d8656b0ee8cbp-97},
    {0x1.952c77030ad4ap-49, 0x1.ac981465ddc6cp-103},
    {-0x1.2f49b46814157p-57, -0x1.2650f61dbdcb4p-112},
    {0x1.71b8ef6dcf572p-66, -0x1.d043ae40c4647p-120},
    {-0x1.761b41316381ap-75, 0x1.3423c7d91404fp-130},
    {0x1.3f3ccdd165fa9p-84, -0x1.58ddadf344487p-139},
    {-0x1.d1ab1c2dccea3p-94, -0x1.054d0c78aea14p-149},
    {0x1.259f98b4358adp-103, 0x1.eaf8c39dd9bc5p-157},
};
/* (-1)^i/(2i)!, i = 0..15 (cos r = 1 + sum_{i>=1} c_i r^2i), as double-double. */
SB_MATH_TABLE static const double sb_cos_coef[16][2] = {
    {0x1.0000000000000p+0, 0x0.0p+0},
    {-0x1.0000000000000p-1, 0x0.0p+0},
    {0x1.5555555555555p-5, 0x1.5555555555555p-59},
    {-0x1.6c16c16c16c17p-10, 0x1.f49f49f49f49fp-65},
    {0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76},
    {-0x1.27e4fb7789f5cp-22, -0x1.cbbc05b4fa99ap-76},
    {0x1.1eed8eff8d898p-29, -0x1.2aec959e14c06p-83},
    {-0x1.93974a8c07c9dp-37, -0x1.05d6f8a2efd1fp-92},
    {0x1.ae7f3e733b81fp-45, 0x1.1d8656b0ee8cbp-101},
    {-0x1.6827863b97d97p-53, -0x1.eec01221a8b0bp-107},
    {0x1.e542ba4020225p-62, 0x1.ea72b4afe3c2fp-120},
    {-0x1.0ce396db7f853p-70, 0x1.aebcdbd20331cp-124},
    {0x1.f2cf01972f578p-80, -0x1.9ada5fcc1ab14p-135},
    {-0x1.88e85fc6a4e5ap-89, 0x1.71c37ebd16540p-143},
    {0x1.0a18a2635085dp-98, 0x1.b9e2e28e1aa54p-153},
    {-0x1.3932c5047d60ep-108, -0x1.832b7b530a627p-162},
};
/* The sin/cos fast path's coefficients, one row per function so that the
 * quadrant picks them without a branch: row 0 holds sin's c_1..c_8 and a
 * zero, row 1 cos's c_1..c_9 (the same doubles as the heads above). */
SB_MATH_TABLE static const double sb_sincos_fast_coef[2][9] = {
    {-0x1.5555555555555p-3, 0x1.1111111111111p-7, -0x1.a01a01a01a01ap-13, 0x1.71de3a556c734p-19, -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49, 0x0p+0},
    {-0x1.0000000000000p-1, 0x1.5555555555555p-5, -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45, -0x1.6827863b97d97p-53},
};

#endif
