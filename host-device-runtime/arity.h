/* Calls through a function pointer with a count of pointer-sized arguments known only at run
 * time (kernels take one per mapped value; outlined parallel regions one per shared variable).
 * On x86-64 every such argument travels in an integer register or an 8-byte stack slot, so a
 * call with N words is a call through a prototype of N uintptr_t parameters.
 * One case per count up to HDR_MAX_ARGS, each through a prototype built by the macros below. */
#ifndef HDR_ARITY_H
#define HDR_ARITY_H

#define HDR_MAX_ARGS 64

#define HDR_T1 uintptr_t
#define HDR_T2 HDR_T1, uintptr_t
#define HDR_T3 HDR_T2, uintptr_t
#define HDR_T4 HDR_T3, uintptr_t
#define HDR_T5 HDR_T4, uintptr_t
#define HDR_T6 HDR_T5, uintptr_t
#define HDR_T7 HDR_T6, uintptr_t
#define HDR_T8 HDR_T7, uintptr_t
#define HDR_T9 HDR_T8, uintptr_t
#define HDR_T10 HDR_T9, uintptr_t
#define HDR_T11 HDR_T10, uintptr_t
#define HDR_T12 HDR_T11, uintptr_t
#define HDR_T13 HDR_T12, uintptr_t
#define HDR_T14 HDR_T13, uintptr_t
#define HDR_T15 HDR_T14, uintptr_t
#define HDR_T16 HDR_T15, uintptr_t
#define HDR_T17 HDR_T16, uintptr_t
#define HDR_T18 HDR_T17, uintptr_t
#define HDR_T19 HDR_T18, uintptr_t
#define HDR_T20 HDR_T19, uintptr_t
#define HDR_T21 HDR_T20, uintptr_t
#define HDR_T22 HDR_T21, uintptr_t
#define HDR_T23 HDR_T22, uintptr_t
#define HDR_T24 HDR_T23, uintptr_t
#define HDR_T25 HDR_T24, uintptr_t
#define HDR_T26 HDR_T25, uintptr_t
#define HDR_T27 HDR_T26, uintptr_t
#define HDR_T28 HDR_T27, uintptr_t
#define HDR_T29 HDR_T28, uintptr_t
#define HDR_T30 HDR_T29, uintptr_t
#define HDR_T31 HDR_T30, uintptr_t
#define HDR_T32 HDR_T31, uintptr_t
#define HDR_T33 HDR_T32, uintptr_t
#define HDR_T34 HDR_T33, uintptr_t
#define HDR_T35 HDR_T34, uintptr_t
#define HDR_T36 HDR_T35, uintptr_t
#define HDR_T37 HDR_T36, uintptr_t
#define HDR_T38 HDR_T37, uintptr_t
#define HDR_T39 HDR_T38, uintptr_t
#define HDR_T40 HDR_T39, uintptr_t
#define HDR_T41 HDR_T40, uintptr_t
#define HDR_T42 HDR_T41, uintptr_t
#define HDR_T43 HDR_T42, uintptr_t
#define HDR_T44 HDR_T43, uintptr_t
#define HDR_T45 HDR_T44, uintptr_t
#define HDR_T46 HDR_T45, uintptr_t
#define HDR_T47 HDR_T46, uintptr_t
#define HDR_T48 HDR_T47, uintptr_t
#define HDR_T49 HDR_T48, uintptr_t
#define HDR_T50 HDR_T49, uintptr_t
#define HDR_T51 HDR_T50, uintptr_t
#define HDR_T52 HDR_T51, uintptr_t
#define HDR_T53 HDR_T52, uintptr_t
#define HDR_T54 HDR_T53, uintptr_t
#define HDR_T55 HDR_T54, uintptr_t
#define HDR_T56 HDR_T55, uintptr_t
#define HDR_T57 HDR_T56, uintptr_t
#define HDR_T58 HDR_T57, uintptr_t
#define HDR_T59 HDR_T58, uintptr_t
#define HDR_T60 HDR_T59, uintptr_t
#define HDR_T61 HDR_T60, uintptr_t
#define HDR_T62 HDR_T61, uintptr_t
#define HDR_T63 HDR_T62, uintptr_t
#define HDR_T64 HDR_T63, uintptr_t
#define HDR_W1(a) (a)[0]
#define HDR_W2(a) HDR_W1(a), (a)[1]
#define HDR_W3(a) HDR_W2(a), (a)[2]
#define HDR_W4(a) HDR_W3(a), (a)[3]
#define HDR_W5(a) HDR_W4(a), (a)[4]
#define HDR_W6(a) HDR_W5(a), (a)[5]
#define HDR_W7(a) HDR_W6(a), (a)[6]
#define HDR_W8(a) HDR_W7(a), (a)[7]
#define HDR_W9(a) HDR_W8(a), (a)[8]
#define HDR_W10(a) HDR_W9(a), (a)[9]
#define HDR_W11(a) HDR_W10(a), (a)[10]
#define HDR_W12(a) HDR_W11(a), (a)[11]
#define HDR_W13(a) HDR_W12(a), (a)[12]
#define HDR_W14(a) HDR_W13(a), (a)[13]
#define HDR_W15(a) HDR_W14(a), (a)[14]
#define HDR_W16(a) HDR_W15(a), (a)[15]
#define HDR_W17(a) HDR_W16(a), (a)[16]
#define HDR_W18(a) HDR_W17(a), (a)[17]
#define HDR_W19(a) HDR_W18(a), (a)[18]
#define HDR_W20(a) HDR_W19(a), (a)[19]
#define HDR_W21(a) HDR_W20(a), (a)[20]
#define HDR_W22(a) HDR_W21(a), (a)[21]
#define HDR_W23(a) HDR_W22(a), (a)[22]
#define HDR_W24(a) HDR_W23(a), (a)[23]
#define HDR_W25(a) HDR_W24(a), (a)[24]
#define HDR_W26(a) HDR_W25(a), (a)[25]
#define HDR_W27(a) HDR_W26(a), (a)[26]
#define HDR_W28(a) HDR_W27(a), (a)[27]
#define HDR_W29(a) HDR_W28(a), (a)[28]
#define HDR_W30(a) HDR_W29(a), (a)[29]
#define HDR_W31(a) HDR_W30(a), (a)[30]
#define HDR_W32(a) HDR_W31(a), (a)[31]
#define HDR_W33(a) HDR_W32(a), (a)[32]
#define HDR_W34(a) HDR_W33(a), (a)[33]
#define HDR_W35(a) HDR_W34(a), (a)[34]
#define HDR_W36(a) HDR_W35(a), (a)[35]
#define HDR_W37(a) HDR_W36(a), (a)[36]
#define HDR_W38(a) HDR_W37(a), (a)[37]
#define HDR_W39(a) HDR_W38(a), (a)[38]
#define HDR_W40(a) HDR_W39(a), (a)[39]
#define HDR_W41(a) HDR_W40(a), (a)[40]
#define HDR_W42(a) HDR_W41(a), (a)[41]
#define HDR_W43(a) HDR_W42(a), (a)[42]
#define HDR_W44(a) HDR_W43(a), (a)[43]
#define HDR_W45(a) HDR_W44(a), (a)[44]
#define HDR_W46(a) HDR_W45(a), (a)[45]
#define HDR_W47(a) HDR_W46(a), (a)[46]
#define HDR_W48(a) HDR_W47(a), (a)[47]
#define HDR_W49(a) HDR_W48(a), (a)[48]
#define HDR_W50(a) HDR_W49(a), (a)[49]
#define HDR_W51(a) HDR_W50(a), (a)[50]
#define HDR_W52(a) HDR_W51(a), (a)[51]
#define HDR_W53(a) HDR_W52(a), (a)[52]
#define HDR_W54(a) HDR_W53(a), (a)[53]
#define HDR_W55(a) HDR_W54(a), (a)[54]
#define HDR_W56(a) HDR_W55(a), (a)[55]
#define HDR_W57(a) HDR_W56(a), (a)[56]
#define HDR_W58(a) HDR_W57(a), (a)[57]
#define HDR_W59(a) HDR_W58(a), (a)[58]
#define HDR_W60(a) HDR_W59(a), (a)[59]
#define HDR_W61(a) HDR_W60(a), (a)[60]
#define HDR_W62(a) HDR_W61(a), (a)[61]
#define HDR_W63(a) HDR_W62(a), (a)[62]
#define HDR_W64(a) HDR_W63(a), (a)[63]

/* fn(w[0], ..., w[n-1]); returns 0, or -1 when n is over HDR_MAX_ARGS. */
static int hdr_call_words(void *fn, const uintptr_t *w, uint64_t n) {
    switch (n) {
    case 0: ((void (*)(void))fn)(); return 0;
    case 1: ((void (*)(HDR_T1))fn)(HDR_W1(w)); return 0;
    case 2: ((void (*)(HDR_T2))fn)(HDR_W2(w)); return 0;
    case 3: ((void (*)(HDR_T3))fn)(HDR_W3(w)); return 0;
    case 4: ((void (*)(HDR_T4))fn)(HDR_W4(w)); return 0;
    case 5: ((void (*)(HDR_T5))fn)(HDR_W5(w)); return 0;
    case 6: ((void (*)(HDR_T6))fn)(HDR_W6(w)); return 0;
    case 7: ((void (*)(HDR_T7))fn)(HDR_W7(w)); return 0;
    case 8: ((void (*)(HDR_T8))fn)(HDR_W8(w)); return 0;
    case 9: ((void (*)(HDR_T9))fn)(HDR_W9(w)); return 0;
    case 10: ((void (*)(HDR_T10))fn)(HDR_W10(w)); return 0;
    case 11: ((void (*)(HDR_T11))fn)(HDR_W11(w)); return 0;
    case 12: ((void (*)(HDR_T12))fn)(HDR_W12(w)); return 0;
    case 13: ((void (*)(HDR_T13))fn)(HDR_W13(w)); return 0;
    case 14: ((void (*)(HDR_T14))fn)(HDR_W14(w)); return 0;
    case 15: ((void (*)(HDR_T15))fn)(HDR_W15(w)); return 0;
    case 16: ((void (*)(HDR_T16))fn)(HDR_W16(w)); return 0;
    case 17: ((void (*)(HDR_T17))fn)(HDR_W17(w)); return 0;
    case 18: ((void (*)(HDR_T18))fn)(HDR_W18(w)); return 0;
    case 19: ((void (*)(HDR_T19))fn)(HDR_W19(w)); return 0;
    case 20: ((void (*)(HDR_T20))fn)(HDR_W20(w)); return 0;
    case 21: ((void (*)(HDR_T21))fn)(HDR_W21(w)); return 0;
    case 22: ((void (*)(HDR_T22))fn)(HDR_W22(w)); return 0;
    case 23: ((void (*)(HDR_T23))fn)(HDR_W23(w)); return 0;
    case 24: ((void (*)(HDR_T24))fn)(HDR_W24(w)); return 0;
    case 25: ((void (*)(HDR_T25))fn)(HDR_W25(w)); return 0;
    case 26: ((void (*)(HDR_T26))fn)(HDR_W26(w)); return 0;
    case 27: ((void (*)(HDR_T27))fn)(HDR_W27(w)); return 0;
    case 28: ((void (*)(HDR_T28))fn)(HDR_W28(w)); return 0;
    case 29: ((void (*)(HDR_T29))fn)(HDR_W29(w)); return 0;
    case 30: ((void (*)(HDR_T30))fn)(HDR_W30(w)); return 0;
    case 31: ((void (*)(HDR_T31))fn)(HDR_W31(w)); return 0;
    case 32: ((void (*)(HDR_T32))fn)(HDR_W32(w)); return 0;
    case 33: ((void (*)(HDR_T33))fn)(HDR_W33(w)); return 0;
    case 34: ((void (*)(HDR_T34))fn)(HDR_W34(w)); return 0;
    case 35: ((void (*)(HDR_T35))fn)(HDR_W35(w)); return 0;
    case 36: ((void (*)(HDR_T36))fn)(HDR_W36(w)); return 0;
    case 37: ((void (*)(HDR_T37))fn)(HDR_W37(w)); return 0;
    case 38: ((void (*)(HDR_T38))fn)(HDR_W38(w)); return 0;
    case 39: ((void (*)(HDR_T39))fn)(HDR_W39(w)); return 0;
    case 40: ((void (*)(HDR_T40))fn)(HDR_W40(w)); return 0;
    case 41: ((void (*)(HDR_T41))fn)(HDR_W41(w)); return 0;
    case 42: ((void (*)(HDR_T42))fn)(HDR_W42(w)); return 0;
    case 43: ((void (*)(HDR_T43))fn)(HDR_W43(w)); return 0;
    case 44: ((void (*)(HDR_T44))fn)(HDR_W44(w)); return 0;
    case 45: ((void (*)(HDR_T45))fn)(HDR_W45(w)); return 0;
    case 46: ((void (*)(HDR_T46))fn)(HDR_W46(w)); return 0;
    case 47: ((void (*)(HDR_T47))fn)(HDR_W47(w)); return 0;
    case 48: ((void (*)(HDR_T48))fn)(HDR_W48(w)); return 0;
    case 49: ((void (*)(HDR_T49))fn)(HDR_W49(w)); return 0;
    case 50: ((void (*)(HDR_T50))fn)(HDR_W50(w)); return 0;
    case 51: ((void (*)(HDR_T51))fn)(HDR_W51(w)); return 0;
    case 52: ((void (*)(HDR_T52))fn)(HDR_W52(w)); return 0;
    case 53: ((void (*)(HDR_T53))fn)(HDR_W53(w)); return 0;
    case 54: ((void (*)(HDR_T54))fn)(HDR_W54(w)); return 0;
    case 55: ((void (*)(HDR_T55))fn)(HDR_W55(w)); return 0;
    case 56: ((void (*)(HDR_T56))fn)(HDR_W56(w)); return 0;
    case 57: ((void (*)(HDR_T57))fn)(HDR_W57(w)); return 0;
    case 58: ((void (*)(HDR_T58))fn)(HDR_W58(w)); return 0;
    case 59: ((void (*)(HDR_T59))fn)(HDR_W59(w)); return 0;
    case 60: ((void (*)(HDR_T60))fn)(HDR_W60(w)); return 0;
    case 61: ((void (*)(HDR_T61))fn)(HDR_W61(w)); return 0;
    case 62: ((void (*)(HDR_T62))fn)(HDR_W62(w)); return 0;
    case 63: ((void (*)(HDR_T63))fn)(HDR_W63(w)); return 0;
    case 64: ((void (*)(HDR_T64))fn)(HDR_W64(w)); return 0;
    default: return -1;
    }
}

/* fn(gtid, btid, w[0], ..., w[n-1]): an outlined parallel region. */
static int hdr_call_microtask(void *fn, int32_t *gtid, int32_t *btid, void *const *args, uint64_t n) {
    const uintptr_t *w = (const uintptr_t *)args;
    switch (n) {
    case 0: ((void (*)(int32_t *, int32_t *))fn)(gtid, btid); return 0;
    case 1: ((void (*)(int32_t *, int32_t *, HDR_T1))fn)(gtid, btid, HDR_W1(w)); return 0;
    case 2: ((void (*)(int32_t *, int32_t *, HDR_T2))fn)(gtid, btid, HDR_W2(w)); return 0;
    case 3: ((void (*)(int32_t *, int32_t *, HDR_T3))fn)(gtid, btid, HDR_W3(w)); return 0;
    case 4: ((void (*)(int32_t *, int32_t *, HDR_T4))fn)(gtid, btid, HDR_W4(w)); return 0;
    case 5: ((void (*)(int32_t *, int32_t *, HDR_T5))fn)(gtid, btid, HDR_W5(w)); return 0;
    case 6: ((void (*)(int32_t *, int32_t *, HDR_T6))fn)(gtid, btid, HDR_W6(w)); return 0;
    case 7: ((void (*)(int32_t *, int32_t *, HDR_T7))fn)(gtid, btid, HDR_W7(w)); return 0;
    case 8: ((void (*)(int32_t *, int32_t *, HDR_T8))fn)(gtid, btid, HDR_W8(w)); return 0;
    case 9: ((void (*)(int32_t *, int32_t *, HDR_T9))fn)(gtid, btid, HDR_W9(w)); return 0;
    case 10: ((void (*)(int32_t *, int32_t *, HDR_T10))fn)(gtid, btid, HDR_W10(w)); return 0;
    case 11: ((void (*)(int32_t *, int32_t *, HDR_T11))fn)(gtid, btid, HDR_W11(w)); return 0;
    case 12: ((void (*)(int32_t *, int32_t *, HDR_T12))fn)(gtid, btid, HDR_W12(w)); return 0;
    case 13: ((void (*)(int32_t *, int32_t *, HDR_T13))fn)(gtid, btid, HDR_W13(w)); return 0;
    case 14: ((void (*)(int32_t *, int32_t *, HDR_T14))fn)(gtid, btid, HDR_W14(w)); return 0;
    case 15: ((void (*)(int32_t *, int32_t *, HDR_T15))fn)(gtid, btid, HDR_W15(w)); return 0;
    case 16: ((void (*)(int32_t *, int32_t *, HDR_T16))fn)(gtid, btid, HDR_W16(w)); return 0;
    case 17: ((void (*)(int32_t *, int32_t *, HDR_T17))fn)(gtid, btid, HDR_W17(w)); return 0;
    case 18: ((void (*)(int32_t *, int32_t *, HDR_T18))fn)(gtid, btid, HDR_W18(w)); return 0;
    case 19: ((void (*)(int32_t *, int32_t *, HDR_T19))fn)(gtid, btid, HDR_W19(w)); return 0;
    case 20: ((void (*)(int32_t *, int32_t *, HDR_T20))fn)(gtid, btid, HDR_W20(w)); return 0;
    case 21: ((void (*)(int32_t *, int32_t *, HDR_T21))fn)(gtid, btid, HDR_W21(w)); return 0;
    case 22: ((void (*)(int32_t *, int32_t *, HDR_T22))fn)(gtid, btid, HDR_W22(w)); return 0;
    case 23: ((void (*)(int32_t *, int32_t *, HDR_T23))fn)(gtid, btid, HDR_W23(w)); return 0;
    case 24: ((void (*)(int32_t *, int32_t *, HDR_T24))fn)(gtid, btid, HDR_W24(w)); return 0;
    case 25: ((void (*)(int32_t *, int32_t *, HDR_T25))fn)(gtid, btid, HDR_W25(w)); return 0;
    case 26: ((void (*)(int32_t *, int32_t *, HDR_T26))fn)(gtid, btid, HDR_W26(w)); return 0;
    case 27: ((void (*)(int32_t *, int32_t *, HDR_T27))fn)(gtid, btid, HDR_W27(w)); return 0;
    case 28: ((void (*)(int32_t *, int32_t *, HDR_T28))fn)(gtid, btid, HDR_W28(w)); return 0;
    case 29: ((void (*)(int32_t *, int32_t *, HDR_T29))fn)(gtid, btid, HDR_W29(w)); return 0;
    case 30: ((void (*)(int32_t *, int32_t *, HDR_T30))fn)(gtid, btid, HDR_W30(w)); return 0;
    case 31: ((void (*)(int32_t *, int32_t *, HDR_T31))fn)(gtid, btid, HDR_W31(w)); return 0;
    case 32: ((void (*)(int32_t *, int32_t *, HDR_T32))fn)(gtid, btid, HDR_W32(w)); return 0;
    case 33: ((void (*)(int32_t *, int32_t *, HDR_T33))fn)(gtid, btid, HDR_W33(w)); return 0;
    case 34: ((void (*)(int32_t *, int32_t *, HDR_T34))fn)(gtid, btid, HDR_W34(w)); return 0;
    case 35: ((void (*)(int32_t *, int32_t *, HDR_T35))fn)(gtid, btid, HDR_W35(w)); return 0;
    case 36: ((void (*)(int32_t *, int32_t *, HDR_T36))fn)(gtid, btid, HDR_W36(w)); return 0;
    case 37: ((void (*)(int32_t *, int32_t *, HDR_T37))fn)(gtid, btid, HDR_W37(w)); return 0;
    case 38: ((void (*)(int32_t *, int32_t *, HDR_T38))fn)(gtid, btid, HDR_W38(w)); return 0;
    case 39: ((void (*)(int32_t *, int32_t *, HDR_T39))fn)(gtid, btid, HDR_W39(w)); return 0;
    case 40: ((void (*)(int32_t *, int32_t *, HDR_T40))fn)(gtid, btid, HDR_W40(w)); return 0;
    case 41: ((void (*)(int32_t *, int32_t *, HDR_T41))fn)(gtid, btid, HDR_W41(w)); return 0;
    case 42: ((void (*)(int32_t *, int32_t *, HDR_T42))fn)(gtid, btid, HDR_W42(w)); return 0;
    case 43: ((void (*)(int32_t *, int32_t *, HDR_T43))fn)(gtid, btid, HDR_W43(w)); return 0;
    case 44: ((void (*)(int32_t *, int32_t *, HDR_T44))fn)(gtid, btid, HDR_W44(w)); return 0;
    case 45: ((void (*)(int32_t *, int32_t *, HDR_T45))fn)(gtid, btid, HDR_W45(w)); return 0;
    case 46: ((void (*)(int32_t *, int32_t *, HDR_T46))fn)(gtid, btid, HDR_W46(w)); return 0;
    case 47: ((void (*)(int32_t *, int32_t *, HDR_T47))fn)(gtid, btid, HDR_W47(w)); return 0;
    case 48: ((void (*)(int32_t *, int32_t *, HDR_T48))fn)(gtid, btid, HDR_W48(w)); return 0;
    case 49: ((void (*)(int32_t *, int32_t *, HDR_T49))fn)(gtid, btid, HDR_W49(w)); return 0;
    case 50: ((void (*)(int32_t *, int32_t *, HDR_T50))fn)(gtid, btid, HDR_W50(w)); return 0;
    case 51: ((void (*)(int32_t *, int32_t *, HDR_T51))fn)(gtid, btid, HDR_W51(w)); return 0;
    case 52: ((void (*)(int32_t *, int32_t *, HDR_T52))fn)(gtid, btid, HDR_W52(w)); return 0;
    case 53: ((void (*)(int32_t *, int32_t *, HDR_T53))fn)(gtid, btid, HDR_W53(w)); return 0;
    case 54: ((void (*)(int32_t *, int32_t *, HDR_T54))fn)(gtid, btid, HDR_W54(w)); return 0;
    case 55: ((void (*)(int32_t *, int32_t *, HDR_T55))fn)(gtid, btid, HDR_W55(w)); return 0;
    case 56: ((void (*)(int32_t *, int32_t *, HDR_T56))fn)(gtid, btid, HDR_W56(w)); return 0;
    case 57: ((void (*)(int32_t *, int32_t *, HDR_T57))fn)(gtid, btid, HDR_W57(w)); return 0;
    case 58: ((void (*)(int32_t *, int32_t *, HDR_T58))fn)(gtid, btid, HDR_W58(w)); return 0;
    case 59: ((void (*)(int32_t *, int32_t *, HDR_T59))fn)(gtid, btid, HDR_W59(w)); return 0;
    case 60: ((void (*)(int32_t *, int32_t *, HDR_T60))fn)(gtid, btid, HDR_W60(w)); return 0;
    case 61: ((void (*)(int32_t *, int32_t *, HDR_T61))fn)(gtid, btid, HDR_W61(w)); return 0;
    case 62: ((void (*)(int32_t *, int32_t *, HDR_T62))fn)(gtid, btid, HDR_W62(w)); return 0;
    case 63: ((void (*)(int32_t *, int32_t *, HDR_T63))fn)(gtid, btid, HDR_W63(w)); return 0;
    case 64: ((void (*)(int32_t *, int32_t *, HDR_T64))fn)(gtid, btid, HDR_W64(w)); return 0;
    default: return -1;
    }
}

#endif
