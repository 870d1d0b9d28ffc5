/** NOTIFY channel every publish signals (payload: the topic) so consumers wake without polling. */
export const BUS_CHANNEL = 'otmoic_bus';
